import type { Db } from '../db/connection.js';
import type { ItemRow, OutboxRow, ProductRow, UserRow } from '../db/schema.js';
import { findItemHeadsByIds, type ItemHead } from '../items/index.js';
import {
  itemThreadId,
  renderBlockEmail,
  renderCommentEmail,
  type MessageBody,
  type MessageRenderer,
  type ReplyAddresses,
  type UnsubscribeLinks,
} from '../mail/index.js';
import { textAsHtml, type MarkdownRenderer } from '../markdown.js';
import { findProduct } from '../products/index.js';
import { findUsersByIds } from '../users/index.js';
import { findBlocksByIds, findCommentsByIds } from './repository.js';

/** By id, the rows a batch of messages names, each read once. */
const byId = <T extends { id: number }>(rows: T[]) => new Map(rows.map((r) => [r.id, r]));
const idsOf = (messages: OutboxRow[], key: 'comment_id' | 'block_id') =>
  [...new Set(messages.flatMap((m) => (m[key] === null ? [] : [m[key]])))] as number[];

/** The items, authors and products a batch's comments or blocks name, in a few queries. */
async function loadAround(db: Db, itemIds: number[], userIds: number[]) {
  const items = byId(await findItemHeadsByIds(db, [...new Set(itemIds)]));
  const users = byId(await findUsersByIds(db, [...new Set(userIds)]));
  const products = new Map<number, ProductRow | undefined>();
  for (const id of new Set([...items.values()].map((i) => i.product_id))) products.set(id, await findProduct(db, id));
  return { items, users, products };
}

/** What mail threads an item's messages by: they all refer to one Message-ID of the item's. */
const threadHeaders = (item: Pick<ItemRow, 'id'>, mailDomain: string): Record<string, string> => {
  const thread = itemThreadId(item.id, mailDomain);
  return { 'In-Reply-To': thread, References: thread };
};

/**
 * Comment messages as their recipients read them, rendered when they are sent, each in its item's
 * thread and with Reply-To the item's discussion address signed for the recipient. A message
 * whose comment is gone (deleted since) maps to null and is not sent.
 */
export function commentMessageRenderer(o: {
  publicUrl: string;
  mailDomain: string;
  links: UnsubscribeLinks;
  replies: ReplyAddresses;
  markdown: MarkdownRenderer;
}): MessageRenderer {
  return async (db, messages) => {
    const comments = byId(await findCommentsByIds(db, idsOf(messages, 'comment_id')));
    const { items, users, products } = await loadAround(
      db,
      [...comments.values()].map((c) => c.item_id),
      [...comments.values()].map((c) => c.user_id),
    );
    const rendered = new Map<number, MessageBody | null>();
    for (const message of messages) {
      const comment = message.comment_id === null ? undefined : comments.get(message.comment_id);
      const item = comment && items.get(comment.item_id);
      const product = item && products.get(item.product_id);
      const author = comment && users.get(comment.user_id);
      if (!comment || !item || !product || !author || message.user_id === null) {
        rendered.set(message.id, null);
        continue;
      }
      const bodyHtml = (await o.markdown.render(comment.body)) ?? textAsHtml(comment.body);
      const body = renderCommentEmail({
        product,
        item,
        author,
        comment,
        bodyHtml,
        subject: message.subject,
        unsubscribeUrl: o.links.url(message.message_id),
        publicUrl: o.publicUrl,
        replies: true,
      });
      rendered.set(message.id, {
        ...body,
        headers: threadHeaders(item, o.mailDomain),
        replyTo: o.replies.address(item.id, message.user_id),
      });
    }
    return rendered;
  };
}

/** Block messages, to the blocked item's assignee, in that item's thread; null when the block is gone. */
export function blockMessageRenderer(o: { publicUrl: string; mailDomain: string }): MessageRenderer {
  return async (db, messages) => {
    const blocks = byId(await findBlocksByIds(db, idsOf(messages, 'block_id')));
    const { items, users, products } = await loadAround(
      db,
      [...blocks.values()].flatMap((b) => [b.item_id, b.blocked_id]),
      [...blocks.values()].map((b) => b.user_id),
    );
    const rendered = new Map<number, MessageBody | null>();
    for (const message of messages) {
      const block = message.block_id === null ? undefined : blocks.get(message.block_id);
      const parts = block && {
        blocker: items.get(block.item_id),
        blocked: items.get(block.blocked_id),
        by: users.get(block.user_id),
      };
      const product = parts?.blocked && products.get(parts.blocked.product_id);
      if (!block || !parts?.blocker || !parts.blocked || !parts.by || !product || block.unblocked === 1) {
        rendered.set(message.id, null);
        continue;
      }
      const { blocker, blocked, by } = parts as { blocker: ItemHead; blocked: ItemHead; by: UserRow };
      rendered.set(message.id, {
        ...renderBlockEmail({
          product,
          blocker,
          blocked,
          by,
          createdAt: block.created_at,
          subject: message.subject,
          publicUrl: o.publicUrl,
        }),
        headers: threadHeaders(blocked, o.mailDomain),
      });
    }
    return rendered;
  };
}
