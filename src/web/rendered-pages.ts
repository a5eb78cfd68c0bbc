import crypto from 'node:crypto';
import { LruCache } from '../lru.js';
import { raw, type Html } from './views/html.js';
import type { Viewer } from './views/layout.js';

/**
 * Pages that look the same to every member who asks the same question, rendered once and kept
 * under a key that names everything they show (a product's revision, read from the database on
 * each request, moves with every change to its items and members; so every instance renders
 * anew as soon as a change commits, wherever it was made). The one thing that differs between
 * people, the form token, is rendered as a slot that no typed text can contain and filled in per
 * request. Bounded by count; a board page is a few hundred KiB.
 */
export class RenderedPages {
  private readonly slot = `slot-${crypto.randomBytes(16).toString('hex')}`;
  private readonly pages: LruCache<string, string[]>;

  constructor(capacity: number) {
    this.pages = new LruCache(capacity);
  }

  /**
   * The page under `key` for this viewer, rendered by `make` when it is not kept (nothing is kept
   * without a key). `make` renders for anybody: its viewer has no email and a slot for a token.
   */
  async render(key: string | undefined, viewer: Viewer, make: (anybody: Viewer) => Promise<Html>): Promise<Html> {
    let parts = key === undefined ? undefined : this.pages.get(key);
    if (parts === undefined) {
      parts = (await make({ email: '', csrfToken: this.slot })).text.split(this.slot);
      if (key !== undefined) this.pages.set(key, parts);
    }
    return raw(parts.join(viewer.csrfToken));
  }
}
