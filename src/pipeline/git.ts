import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EXIT, Failure } from './failure.js';

/**
 * Every `#` followed by digits (`#12`, `[#12]`, `Fixes #12`, `Refs #12, #13`). `\b` keeps colours
 * and hashes such as `#12ab` out.
 */
export const DEFAULT_ITEM_PATTERN = '#(\\d+)\\b';

/**
 * The pattern as it is matched: globally, case-insensitively, `^` and `$` at line boundaries. The
 * first capture group is the item number, so a pattern without one is refused.
 */
export function compileItemPattern(source: string): RegExp {
  let pattern: RegExp;
  try {
    pattern = new RegExp(source, 'gim');
  } catch (e) {
    throw new Failure(EXIT.usage, `the item pattern is not a regular expression: ${(e as Error).message}`);
  }
  // An alternative that matches the empty string exposes how many groups the pattern has.
  const groups = new RegExp(`${source}|`).exec('')!.length - 1;
  if (groups < 1)
    throw new Failure(
      EXIT.usage,
      `the item pattern ${source} has no capture group: its first group must capture the item number`,
    );
  return pattern;
}

/**
 * The item numbers `pattern` finds in the messages, each once, in order; captures that are not
 * digits are passed over.
 */
export function itemNumbers(messages: string[], pattern: RegExp): number[] {
  const numbers = new Set<number>();
  for (const message of messages) {
    for (const match of message.matchAll(pattern)) {
      const digits = match[1];
      if (digits === undefined || !/^\d+$/.test(digits)) continue;
      const number = Number(digits);
      if (Number.isSafeInteger(number) && number > 0) numbers.add(number);
    }
  }
  return [...numbers].sort((a, b) => a - b);
}

export interface Range {
  since: string;
  until: string;
  /** The commit ids the revisions name: what identifies the deploy, whatever names were used. */
  sinceId: string;
  untilId: string;
  /** The whole message (subject and body) of each commit in since..until. */
  messages: string[];
}

/** Runs git in `repo` (no shell); a missing git is a Failure, any other failure is returned. */
function git(repo: string, args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd: repo, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        reject(
          new Failure(
            EXIT.git,
            'git is not installed, or not on PATH: it is needed to read item numbers (or give --numbers)',
          ),
        );
      } else {
        resolve({ ok: !error, stdout, stderr });
      }
    });
  });
}

const firstLine = (text: string): string => text.trim().split('\n')[0] ?? '';

/** The commit a revision names, or a Failure saying why not (with a hint when the clone is shallow). */
async function commitOf(repo: string, revision: string): Promise<string> {
  const resolved = await git(repo, ['rev-parse', '--verify', '--quiet', `${revision}^{commit}`]);
  if (resolved.ok) return resolved.stdout.trim();
  const shallow = (await git(repo, ['rev-parse', '--is-shallow-repository'])).stdout.trim() === 'true';
  const hint = shallow ? ' (the clone is shallow: fetch the whole history, e.g. fetch-depth: 0 or GIT_DEPTH: 0)' : '';
  throw new Failure(EXIT.git, `"${revision}" names no commit in ${path.resolve(repo)}${hint}`);
}

/** The messages of the commits in since..until of the repository at `repo`, and the commits the range names. */
export async function readRange(repo: string, since: string, until: string): Promise<Range> {
  for (const revision of [since, until]) {
    // git would take it for an option.
    if (revision.startsWith('-')) throw new Failure(EXIT.usage, `"${revision}" is not a revision`);
  }
  if (!fs.statSync(repo, { throwIfNoEntry: false })?.isDirectory())
    throw new Failure(EXIT.usage, `${repo} is not a directory`);
  const inside = await git(repo, ['rev-parse', '--git-dir']);
  if (!inside.ok)
    throw new Failure(
      EXIT.git,
      `${path.resolve(repo)} is not a git repository that git can read: ${firstLine(inside.stderr)}`,
    );
  const sinceId = await commitOf(repo, since);
  const untilId = await commitOf(repo, until);
  const log = await git(repo, ['log', '-z', '--no-show-signature', '--format=%B', `${sinceId}..${untilId}`]);
  if (!log.ok) throw new Failure(EXIT.git, `git log ${since}..${until} failed: ${firstLine(log.stderr)}`);
  const messages = log.stdout.split('\0').filter((m) => m.trim() !== '');
  return { since, until, sinceId, untilId, messages };
}
