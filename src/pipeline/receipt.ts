import type { DeployRequest } from './api.js';
import type { Range } from './git.js';

// The answer is read leniently: fields a server does not send (unknown_numbers, emailed,
// recipients on older servers) are left out of the receipt rather than failing a deploy that
// was recorded.

type Json = Record<string, unknown>;

const numberList = (numbers: unknown[]): string => numbers.map((n) => `#${String(n)}`).join(' ');
const textOr = (value: unknown, fallback: string): string => (typeof value === 'string' ? value : fallback);
const objects = (value: unknown): Json[] | undefined =>
  Array.isArray(value) ? value.filter((v): v is Json => !!v && typeof v === 'object') : undefined;

/** One line per recipient of a dry run: who, and which of the items their message would list. */
function recipientLines(recipients: Json[]): string[] {
  if (recipients.length === 0) return ['Would email nobody (no other member follows these items).'];
  return [
    `Would email ${recipients.length} ${recipients.length === 1 ? 'person' : 'people'}:`,
    ...recipients.map((r) => {
      const name = [r.first_name, r.last_name].filter((part) => typeof part === 'string' && part !== '').join(' ');
      const numbers = Array.isArray(r.numbers) ? `: ${numberList(r.numbers)}` : '';
      return `  ${name ? `${name} <${textOr(r.email, '')}>` : textOr(r.email, '(no address)')}${numbers}`;
    }),
  ];
}

/** `emailed` as the server gives it: a count, or the addresses (or users) mailed. */
function emailedLine(emailed: unknown): string | undefined {
  if (typeof emailed === 'number') return `Emailed: ${emailed} ${emailed === 1 ? 'person' : 'people'}.`;
  if (!Array.isArray(emailed)) return undefined;
  if (emailed.length === 0) return 'Emailed: nobody.';
  const who = emailed.map((e) => (e && typeof e === 'object' ? textOr((e as Json).email, '?') : String(e)));
  return `Emailed: ${who.join(', ')}.`;
}

/** What a person reads in the pipeline's log: where the numbers came from, and what the server did with them. */
export function formatReceipt(answer: Json, sent: DeployRequest, range: Range | undefined): string {
  const lines: string[] = [];
  if (range) {
    const commits = `${range.messages.length} commit${range.messages.length === 1 ? '' : 's'}`;
    lines.push(
      `${range.since}..${range.until} (${range.sinceId.slice(0, 12)}..${range.untilId.slice(0, 12)}): ` +
        `${commits} naming ${numberList(sent.numbers)}`,
    );
  }
  const items = objects(answer.items);
  const count = items ? `${items.length} item${items.length === 1 ? '' : 's'}` : numberList(sent.numbers);
  const where = `to ${textOr(answer.environment, sent.environment)}, version ${textOr(answer.version, sent.version)}`;
  lines.push(
    answer.dry_run === true
      ? `Dry run, nothing recorded: would deploy ${count} ${where}`
      : `Deploy ${String(answer.id)} recorded: ${count} ${where}`,
  );
  for (const item of items ?? []) lines.push(`  #${String(item.number)} ${textOr(item.title, '')}`.trimEnd());
  if (Array.isArray(answer.unknown_numbers) && answer.unknown_numbers.length) {
    lines.push(`Not items of the product, skipped: ${numberList(answer.unknown_numbers)}`);
  }
  for (const b of objects(answer.blocked) ?? []) {
    const by = Array.isArray(b.blocked_by) ? b.blocked_by : [];
    const where = textOr(answer.environment, sent.environment);
    lines.push(
      `Blocked: #${String(b.number)} ${answer.dry_run === true ? 'would go' : 'went'} to ${where}; it is blocked by ` +
        `${numberList(by)}, which ${by.length === 1 ? 'is' : 'are'} not there.`,
    );
  }
  const emailed = emailedLine(answer.emailed);
  if (emailed) lines.push(emailed);
  const recipients = objects(answer.recipients);
  if (recipients) lines.push(...recipientLines(recipients));
  return lines.join('\n');
}
