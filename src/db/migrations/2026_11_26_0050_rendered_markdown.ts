import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// Descriptions and deploy notes are rendered from Markdown when they are written, and kept beside
// their source; pages and mail show what is kept. Rows from before have none (null): they are
// shown as escaped text until the fill that runs at start renders them, and the partial indexes
// name exactly those rows, so that the fill finds them without reading the tables, and finds
// nothing at all, at no cost, once it is done.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('items').addColumn('description_html', 'text').execute();
  await db.schema.alterTable('deploys').addColumn('notes_html', 'text').execute();
  await db.schema
    .createIndex('items_description_unrendered')
    .on('items')
    .column('id')
    .where(sql.ref('description_html'), 'is', null)
    .where(sql.ref('description'), '<>', '')
    .execute();
  await db.schema
    .createIndex('deploys_notes_unrendered')
    .on('deploys')
    .column('id')
    .where(sql.ref('notes_html'), 'is', null)
    .where(sql.ref('notes'), '<>', '')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deploys_notes_unrendered').execute();
  await db.schema.dropIndex('items_description_unrendered').execute();
  await db.schema.alterTable('deploys').dropColumn('notes_html').execute();
  await db.schema.alterTable('items').dropColumn('description_html').execute();
}
