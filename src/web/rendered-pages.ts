import crypto from 'node:crypto';
import { keptBytes } from '../kept-bytes.js';
import { LruCache } from '../lru.js';
import { escapeHtml, type Html } from './views/html.js';
import type { Viewer } from './views/layout.js';

/** A kept page: its bytes between the places where each viewer's own address and form token go. */
type Parts = (Buffer | 'email' | 'token')[];

/**
 * Whole pages (the layout included) that look the same to every member who asks the same question,
 * rendered once and kept as bytes under a key that names everything they show (a product's
 * revision, read from the database on each request, moves with every change to its items and
 * members; so every instance renders anew as soon as a change commits, wherever it was made).
 * The two things that differ between people, their address in the navigation and their form
 * token, are rendered as slots that no typed text can contain and filled in per request, so a
 * kept page costs one copy of its bytes. Bounded in bytes: a board page is a few hundred KiB.
 */
export class RenderedPages {
  private readonly id = crypto.randomBytes(16).toString('hex');
  private readonly slots = { email: `slot-email-${this.id}`, token: `slot-token-${this.id}` };
  private readonly slotPattern = new RegExp(`(${this.slots.email}|${this.slots.token})`);
  private readonly pages: LruCache<string, Parts>;

  constructor(budgetBytes: number) {
    const weigh = (parts: Parts) => parts.reduce((sum, part) => sum + (Buffer.isBuffer(part) ? part.length : 0), 0);
    this.pages = new LruCache(budgetBytes, Infinity, weigh);
  }

  /**
   * The page under `key` for this viewer, rendered by `make` when it is not kept (nothing is kept
   * without a key). `make` renders the whole page for anybody: its viewer's address and token are slots.
   */
  async render(key: string | undefined, viewer: Viewer, make: (anybody: Viewer) => Promise<Html>): Promise<Buffer> {
    let parts = key === undefined ? undefined : this.pages.get(key);
    if (parts === undefined) {
      const text = (await make({ email: this.slots.email, csrfToken: this.slots.token })).text;
      parts = text
        .split(this.slotPattern)
        .map((piece, i) => (i % 2 === 0 ? keptBytes(piece) : piece === this.slots.email ? 'email' : 'token'));
      if (key !== undefined) this.pages.set(key, parts);
    }
    const email = Buffer.from(escapeHtml(viewer.email));
    const token = Buffer.from(escapeHtml(viewer.csrfToken));
    return Buffer.concat(parts.map((part) => (part === 'email' ? email : part === 'token' ? token : part)));
  }
}
