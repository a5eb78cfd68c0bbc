import fs from 'node:fs';

/**
 * The modes of what Shiplog writes to disk: the database (API key hashes, session ids, signing
 * keys, webhook secrets), its -wal and -shm, mail written as files (live sign-in and invitation
 * links) and backups are for the account that runs Shiplog alone. Set explicitly rather than left
 * to the umask, which a service manager or a shell may leave at 0 or 022.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIRECTORY_MODE = 0o700;

/**
 * Makes `dir` (with its parents) and sets it to 0700. A directory that is not the process's own
 * cannot be changed (EPERM) and is left as it is: the files in it are private all the same.
 */
export function privateDirectory(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  try {
    fs.chmodSync(dir, PRIVATE_DIRECTORY_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/** Sets the files that exist of `files` to 0600; missing ones are skipped. */
export function makePrivate(...files: string[]): void {
  for (const file of files) {
    try {
      fs.chmodSync(file, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Creates `file` empty with mode 0600 before SQLite opens it (or sets an existing one to 0600).
 * SQLite creates a database's -wal, -shm and -journal with the mode of the database file itself,
 * so they are private too.
 */
export function privateFile(file: string): void {
  const fd = fs.openSync(file, 'a', PRIVATE_FILE_MODE);
  try {
    fs.fchmodSync(fd, PRIVATE_FILE_MODE);
  } finally {
    fs.closeSync(fd);
  }
}
