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
