/**
 * The exit codes of `shiplog deploy`, one per kind of failure, so a pipeline can tell "nothing to
 * deploy" from "the server is down" without reading the message.
 */
export const EXIT = {
  ok: 0,
  /** The server answered with an error (bad credentials, unknown product, no known item, ...). */
  refused: 1,
  /** Options missing or malformed. */
  usage: 2,
  /** The commits of the range mention no item number. */
  noItems: 3,
  /** git is missing, the folder is no repository, or a revision names no commit. */
  git: 4,
  /** The server could not be reached, or did not answer in time. */
  unreachable: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Ends the command with one line on stderr and its exit code. */
export class Failure extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
  ) {
    super(message);
  }
}
