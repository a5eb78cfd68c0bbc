/** The text of each statement PostgreSQL connections prepare, and the name it is prepared under. */
const names = new Map<string, string>();

/** Has connections prepare the statement `text` under a name of its own (see prepared). */
export function nameServerStatement(text: string): void {
  if (!names.has(text)) names.set(text, `shiplog_${names.size + 1}`);
}

/**
 * The name under which a PostgreSQL connection prepares the statement `text` once, and then only
 * binds and runs it; undefined for a statement it parses and plans each time.
 */
export const serverStatementName = (text: string): string | undefined => names.get(text);

/**
 * Statements of pages (a list by its filter and order) named at most. Each is one text whatever
 * its values and offset, and a list asked again and again (the orders and pages of a product)
 * cost its backend more to parse and plan than to run: at a million items, a page by time took
 * 0.6 ms of planning for 0.7 ms of reading. But their texts vary with the filter's shape, and a
 * connection keeps every statement it prepared, so only this many are named; the others are
 * parsed and planned each time, as before.
 */
const PAGE_STATEMENTS_NAMED = 200;
let pageStatementsNamed = 0;

/** Has connections prepare the statement of a page under a name (see PAGE_STATEMENTS_NAMED). */
export function namePageStatement(text: string): void {
  if (names.has(text) || pageStatementsNamed >= PAGE_STATEMENTS_NAMED) return;
  pageStatementsNamed++;
  nameServerStatement(text);
}
