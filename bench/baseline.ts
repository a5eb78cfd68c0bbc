/**
 * The floor the service is compared with: Fastify and better-sqlite3 answering `GET /items` with 20
 * rows of the same items table in index order (product, status, sort), for the statuses the
 * service lists by default. No authentication, no joins, no presenter: what any list endpoint on
 * this stack costs at least. Run as its own process:
 *   node --import tsx bench/baseline.ts DB_FILE PORT
 */
import SQLite from 'better-sqlite3';
import Fastify from 'fastify';

const [file, port] = process.argv.slice(2);
if (!file || !port) {
  process.stderr.write('usage: baseline.ts DB_FILE PORT\n');
  process.exit(2);
}

const db = new SQLite(file, { readonly: true, fileMustExist: true });
const page = db.prepare('select * from items where product_id = 1 and status in (1, 2) order by status, sort limit 20');

const app = Fastify({ logger: false });
app.get('/items', async () => page.all());

const shutdown = () => {
  void app.close().finally(() => {
    db.close();
    process.exit(0);
  });
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);

await app.listen({ port: Number(port), host: '127.0.0.1' });
process.stdout.write('listening\n');
