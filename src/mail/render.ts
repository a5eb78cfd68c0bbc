import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';

/**
 * What a message is made of besides its stored headers: the bodies, and for a message in an
 * item's conversation the headers that thread it and the address a reply goes to.
 */
export type MessageBody = { text: string; html: string; headers?: Record<string, string>; replyTo?: string };

/**
 * Renders a batch of messages of one kind: loads what they are about (the feature that queued
 * them knows where that lives) and feeds it to a pure template. A message whose subject matter
 * is gone maps to null, and is given up.
 */
export type MessageRenderer = (db: Db, messages: OutboxRow[]) => Promise<Map<number, MessageBody | null>>;

/** The renderer of each kind of message (`deploy`, `invitation`), given by the features that queue them. */
export type MessageRenderers = Readonly<Record<string, MessageRenderer>>;

/**
 * The bodies of claimed messages, each by the renderer of its kind: null for a message whose
 * subject matter is gone, undefined for one that could not be rendered now (its renderer failed:
 * the error is handed to `onError`, and only that kind's messages wait for another try).
 */
export async function renderMessages(
  db: Db,
  messages: OutboxRow[],
  renderers: MessageRenderers,
  onError: (err: unknown, kind: string) => void,
): Promise<Map<number, MessageBody | null | undefined>> {
  const rendered = new Map<number, MessageBody | null | undefined>();
  for (const kind of new Set(messages.map((m) => m.kind))) {
    const ofKind = messages.filter((m) => m.kind === kind);
    try {
      const bodies = await renderers[kind](db, ofKind);
      for (const m of ofKind) rendered.set(m.id, bodies.get(m.id) ?? null);
    } catch (err) {
      onError(err, kind);
    }
  }
  return rendered;
}
