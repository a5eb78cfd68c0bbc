/** The interface's timestamp form: ISO 8601, UTC, second precision, numeric offset. */
export function formatTimestamp(date: Date): string {
  return date.toISOString().slice(0, 19) + '+00:00';
}

export function nowTimestamp(): string {
  return formatTimestamp(new Date());
}
