import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** How often the background thread copies committed WAL frames into the database file. */
export const CHECKPOINT_INTERVAL_MS = 100;
/**
 * WAL frames (pages) past which the background thread has the next writer start the WAL anew:
 * 64 MiB of 4 KiB pages.
 */
export const WAL_RESTART_FRAMES = 16_384;

// The thread's whole program. It is plain CommonJS handed to the Worker as text, so it runs the
// same from the built code and from the TypeScript sources the tests load.
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true });
let failing = false;
const timer = setInterval(() => {
  try {
    // PASSIVE never waits for or blocks readers and writers; what it cannot copy now waits a turn.
    const [copied] = db.pragma('wal_checkpoint(PASSIVE)');
    // Writers append to the WAL until one finds every frame copied and starts it anew; under
    // writes that never pause, that moment never comes and the file grows without end. Past the
    // limit, the writer is told to finish the copy itself between two of its transactions.
    if (copied.log > workerData.restartFrames) parentPort.postMessage({ pastLimit: true });
    if (failing) parentPort.postMessage({ recovered: true });
    failing = false;
  } catch (err) {
    // Told once per spell: a full disk fails every turn until space is freed.
    if (!failing) parentPort.postMessage({ error: String(err && err.message || err) });
    failing = true;
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } finally { db.close(); }
  parentPort.close();
});
`;

/**
 * Checkpoints a WAL database from a thread of its own. SQLite otherwise checkpoints inside
 * whichever commit crosses the WAL's size limit, so every thousand pages or so one write (and all
 * requests queued behind it on the event loop) pays for copying and syncing the whole WAL. The
 * connection's own automatic checkpoints are switched off while the thread runs, and back on if it
 * ever stops, so the WAL cannot grow without bound; past `restartFrames`, the writer restarts the
 * WAL between two transactions (`restartIfPastLimit`), even while writes never pause. A
 * checkpoint that fails (a full or read-only disk) is tried again every turn; `onError` hears
 * when they start failing, `onRecovered` when they work again.
 */
export class BackgroundCheckpointer {
  private readonly worker: Worker;
  private stopped = false;
  private pastLimit = false;

  constructor(
    private readonly sqlite: SQLite.Database,
    filename: string,
    intervalMs = CHECKPOINT_INTERVAL_MS,
    onError: (message: string) => void = () => undefined,
    onRecovered: () => void = () => undefined,
    restartFrames = WAL_RESTART_FRAMES,
  ) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(PROGRAM, { eval: true, workerData: { filename, driver, intervalMs, restartFrames } });
    this.worker.on('message', (message: { error?: string; pastLimit?: boolean }) => {
      if (message.pastLimit) this.pastLimit = true;
      else if (message.error === undefined) onRecovered();
      else onError(message.error);
    });
    this.worker.on('error', (err) => {
      onError(err.message);
      this.fallBack();
    });
    this.worker.on('exit', () => this.fallBack());
    // Last: listening for messages refs the thread again, and it must never keep the process alive.
    this.worker.unref();
    sqlite.pragma('wal_autocheckpoint = 0');
  }

  private fallBack(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.sqlite.open) this.sqlite.pragma('wal_autocheckpoint = 1000');
  }

  /**
   * For the writer, between two of its transactions: when the WAL has grown past the limit, copies
   * what the thread has not yet and restarts the WAL (RESTART), so the next commit writes at its
   * beginning. Never waits: when another connection writes or checkpoints right now, the next
   * turn tries again.
   */
  restartIfPastLimit(): void {
    if (!this.pastLimit || this.stopped) return;
    try {
      const [result] = this.sqlite.pragma('wal_checkpoint(RESTART)') as { busy: number }[];
      if (result.busy === 0) this.pastLimit = false;
    } catch {
      // A full or failing disk: the thread's own checkpoints report it, and the writer goes on.
    }
  }

  /** Asks the thread for a last checkpoint and waits for it to end. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.fallBack();
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    // Keeps the process alive until the thread has closed its connection.
    this.worker.ref();
    this.worker.postMessage('stop');
    await exited;
  }
}
