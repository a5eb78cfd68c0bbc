/**
 * Lets other requests run before going on. SQLite queries run synchronously and their promises
 * settle as microtasks, so a handler that reads and renders a thousand items holds the event
 * loop from start to end unless it steps aside between its phases; one turn costs microseconds.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
