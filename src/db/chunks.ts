/**
 * Runs a query over a long list of keys a slice at a time: `IN (...)` lists stay well inside
 * SQLite's and PostgreSQL's limits on bound parameters, however long the list.
 */
export async function inChunks<K, R>(keys: K[], query: (chunk: K[]) => Promise<R[]>, size = 500): Promise<R[]> {
  if (keys.length <= size) return keys.length ? query(keys) : [];
  const results: R[] = [];
  for (let i = 0; i < keys.length; i += size) results.push(...(await query(keys.slice(i, i + size))));
  return results;
}
