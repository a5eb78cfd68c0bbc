import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { escapeHtml } from './http/html.js';

/**
 * Markdown (descriptions, deploy notes) is rendered once, when it is written, and kept as HTML
 * beside its source: no page and no message renders any. markdown-it is synchronous and some
 * inputs are slow by design of the syntax (runs of `![*`, `[<`, nested brackets take it about
 * 2.5 µs per character, 170 ms for 64 KB); on the event loop one such write would hold every
 * other request, and a loop over a page of them held /health for seconds.
 *
 * So it runs in a worker thread, one render at a time, with two bounds (short texts aside, below):
 * - input: text longer than `maxChars` is not parsed at all;
 * - time: a render that has not answered within `deadlineMs` has its worker stopped (the only
 *   way to stop synchronous code) and a new one started for the next.
 * Either way the text is kept as escaped paragraphs instead (textAsHtml), which costs next to
 * nothing and is always safe. A worker, not a proven bound on the input: markdown-it's slow
 * inputs are found one by one (and fixed one release at a time), and a deadline holds for the
 * ones not found yet. Renders happen before the write's transaction opens, never inside it, so a
 * slow one holds no lock and no SQLite writer.
 *
 * What markdown-it is asked for makes the HTML safe: raw HTML in the text is shown as text
 * (`html: false`), and links and images with a script or data scheme are left as text
 * (its validateLink).
 */
export interface MarkdownOptions {
  /** Longest text parsed as Markdown, in UTF-16 code units: the longest any field holds. */
  maxChars: number;
  /** How long one render may run in the worker. */
  deadlineMs: number;
  /** Renders waiting for the worker at most; one more is deferred (the fill renders it later). */
  maxWaiting: number;
  /**
   * Longest HTML kept, in UTF-16 code units: nested quotes and lists make markdown-it's HTML many
   * times its text, and every page and mail that shows it carries it; past this, the text escaped
   * (at most six times the text: `&quot;`).
   */
  maxHtmlChars: number;
  /** How long a new worker may take to load markdown-it before the waiting renders give up. */
  startMs: number;
  /**
   * Texts up to this long are rendered at once on the event loop. At markdown-it's slowest (about
   * 2.5 µs per character) a kilobyte takes under 3 ms, as long as a big read; a trip to the worker
   * takes longer than that when both cores are busy (20-30 ms while reads saturate the service), and
   * a write of a one-line description waited for it.
   */
  inlineChars: number;
}

export const DEFAULT_MARKDOWN_OPTIONS: MarkdownOptions = {
  maxChars: 65_536,
  deadlineMs: 250,
  maxWaiting: 16,
  maxHtmlChars: 512 * 1024,
  startMs: 10_000,
  inlineChars: 1024,
};

/** How markdown-it is set up, in the worker and for short texts alike. */
const MARKDOWN_IT_OPTIONS = { html: false, linkify: true, breaks: true };

// Plain JavaScript, so the worker needs no loader and no file of its own in the bundle.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const MarkdownIt = require(workerData.markdownIt);
const markdown = new MarkdownIt(workerData.options);
parentPort.on('message', ({ id, source }) => {
  let html = null;
  try { html = markdown.render(source); } catch {}
  parentPort.postMessage({ id, html });
});
parentPort.postMessage({ ready: true });
`;

/** Text shown as it was written: escaped, blank lines between paragraphs, line breaks kept. */
export function textAsHtml(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n\s*/)
    .filter((paragraph) => paragraph.trim() !== '')
    .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, '<br>\n')}</p>\n`)
    .join('');
}

/** The HTML to show for a text: what was rendered when it was written, or, for a row from before, the text escaped. */
export const shownHtml = (source: string, rendered: string | null | undefined): string =>
  source === '' ? '' : (rendered ?? textAsHtml(source));

/** What is used of a markdown-it instance. */
interface MarkdownIt {
  render(source: string): string;
}

interface Job {
  id: number;
  source: string;
  resolve: (html: string | null) => void;
  timer?: NodeJS.Timeout;
}

/** Renders Markdown to safe HTML off the event loop, within the bounds above; never rejects. */
export class MarkdownRenderer {
  private worker: Worker | undefined;
  /** markdown-it on the event loop, for short texts; loaded at the first. */
  private here: MarkdownIt | undefined;
  private ready = false;
  private startTimer: NodeJS.Timeout | undefined;
  private current: Job | undefined;
  private readonly waiting: Job[] = [];
  private lastId = 0;
  private closed = false;
  /** Renders kept as escaped text: past the deadline or the size bound, or ending the worker (for tests and logs). */
  fallbacks = 0;
  /**
   * Renders not made now (the queue full, no worker, the renderer closing): their rows keep no HTML
   * for the fill to render.
   */
  deferred = 0;
  /** Told when a render is deferred, so that the fill runs again soon. */
  whenDeferred: (() => void) | undefined;

  constructor(readonly options: MarkdownOptions = DEFAULT_MARKDOWN_OPTIONS) {}

  /**
   * The text as HTML: rendered Markdown; past a bound the text itself sets (size, deadline), the
   * text escaped, for good; or null when it cannot be rendered now (too many waiting, no worker):
   * the row is then kept without HTML, shown escaped meanwhile, and the fill renders it later, so
   * that a burst of writes never leaves anyone's Markdown unrendered for good.
   */
  render(source: string): Promise<string | null> {
    if (source === '') return Promise.resolve('');
    if (source.length > this.options.maxChars) return Promise.resolve(this.fallback(source));
    if (source.length <= this.options.inlineChars) return Promise.resolve(this.renderHere(source));
    if (this.closed || this.waiting.length >= this.options.maxWaiting) return Promise.resolve(this.defer());
    return new Promise((resolve) => {
      this.waiting.push({ id: ++this.lastId, source, resolve });
      this.next();
    });
  }

  /** Stops the worker; renders still waiting get the escaped text. */
  async close(): Promise<void> {
    this.closed = true;
    this.giveUpAll();
    await this.stopWorker();
  }

  /** A short text rendered on the event loop (see inlineChars), within the same bound of its HTML. */
  private renderHere(source: string): string {
    let html: string | null = null;
    try {
      this.here ??= new (createRequire(import.meta.url)('markdown-it'))(MARKDOWN_IT_OPTIONS) as MarkdownIt;
      html = this.here.render(source);
    } catch {
      // As in the worker: a text markdown-it fails on is kept escaped.
    }
    return html !== null && html.length <= this.options.maxHtmlChars ? html : this.fallback(source);
  }

  private fallback(source: string): string {
    this.fallbacks += 1;
    return textAsHtml(source);
  }

  private defer(): null {
    this.deferred += 1;
    this.whenDeferred?.();
    return null;
  }

  private next(): void {
    if (this.current || this.waiting.length === 0 || this.closed) return;
    if (!this.worker) this.startWorker();
    if (!this.ready) return;
    const job = this.waiting.shift()!;
    this.current = job;
    job.timer = setTimeout(() => {
      // Synchronous code cannot be interrupted: the worker goes, and the next render starts another.
      void this.stopWorker();
      this.finish(job, null);
    }, this.options.deadlineMs);
    this.worker!.postMessage({ id: job.id, source: job.source });
  }

  private finish(job: Job, html: string | null): void {
    clearTimeout(job.timer);
    if (this.current === job) this.current = undefined;
    job.resolve(html !== null && html.length <= this.options.maxHtmlChars ? html : this.fallback(job.source));
    this.next();
  }

  private startWorker(): void {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Resolved here: from the project's modules, wherever the server's own file lies.
      workerData: { markdownIt: createRequire(import.meta.url).resolve('markdown-it'), options: MARKDOWN_IT_OPTIONS },
      execArgv: [],
      // A text that makes markdown-it allocate without bound ends the worker, not the process.
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    this.worker = worker;
    this.ready = false;
    this.startTimer = setTimeout(() => {
      void this.stopWorker();
      this.giveUpAll();
    }, this.options.startMs);
    worker.on('message', (message: { ready?: true; id?: number; html?: string | null }) => {
      if (this.worker !== worker) return;
      if (message.ready) {
        clearTimeout(this.startTimer);
        this.ready = true;
        this.next();
      } else if (this.current && message.id === this.current.id) {
        this.finish(this.current, message.html ?? null);
      }
    });
    // Out of memory, or markdown-it missing: what waits is shown escaped; the next render tries a new worker.
    const lost = () => {
      if (this.worker !== worker) return;
      const started = this.ready;
      this.worker = undefined;
      this.ready = false;
      clearTimeout(this.startTimer);
      if (this.current) this.finish(this.current, null);
      if (!started) this.giveUpAll();
    };
    worker.on('error', lost);
    worker.on('exit', lost);
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.ready = false;
    clearTimeout(this.startTimer);
    if (worker) await worker.terminate();
  }

  /** The worker could not start, or the renderer closes: nothing waiting is the text's fault, so all is deferred. */
  private giveUpAll(): void {
    const jobs = [...(this.current ? [this.current] : []), ...this.waiting.splice(0)];
    this.current = undefined;
    for (const job of jobs) {
      clearTimeout(job.timer);
      job.resolve(this.defer());
    }
  }
}
