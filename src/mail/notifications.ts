import crypto from 'node:crypto';
import type { Trx } from '../db/connection.js';
import type { DeployRow, InvitationRow, ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { formatTimestamp } from '../time.js';
import { blockSubject, conversationSubject } from './comment-email.js';
import { deploySubject } from './deploy-email.js';
import { mailbox } from './format.js';
import { invitationSubject } from './invitation-email.js';
import { enqueueMessages } from './outbox.js';
import { rollbackSubject } from './rollback-email.js';
import { SIGNIN_SUBJECT } from './signin-email.js';

/** How long temporary failures of a message are retried before it is given up. */
export const RETRY_WINDOW_MS = 24 * 3600_000;

const retryUntil = (now: Date) => formatTimestamp(new Date(now.getTime() + RETRY_WINDOW_MS));

/** The random part keeps Message-IDs unique even where row ids repeat (a restored backup). */
const unique = () => crypto.randomBytes(6).toString('hex');

/**
 * Queues one message per recipient of a deploy, listing that recipient's items, in the deploy's
 * transaction; a rollback deploy's messages are of their own kind (`rollback`). The bodies are
 * rendered when the worker sends: a row holds what they are made from (the deploy and the item
 * ids), which keeps this transaction short however many followers there are.
 */
export async function queueDeployNotifications(
  trx: Trx,
  notice: {
    product: ProductRow;
    deploy: DeployRow;
    recipients: { user: UserRow; items: Pick<ItemRow, 'id' | 'number' | 'title'>[] }[];
  },
  mailDomain: string,
  now: Date,
): Promise<void> {
  const { product, deploy } = notice;
  const kind = deploy.rollback === 1 ? 'rollback' : 'deploy';
  const subject = kind === 'rollback' ? rollbackSubject : deploySubject;
  const tag = unique();
  const messages = notice.recipients.map(({ user, items }) => {
    const mine = [...items].sort((a, b) => a.number - b.number);
    return {
      kind,
      deploy_id: deploy.id,
      user_id: user.id,
      to_address: mailbox(user),
      subject: subject(product, deploy, mine),
      item_ids: JSON.stringify(mine.map((i) => i.id)),
      message_id: `<${kind}-${deploy.id}-${user.id}.${tag}@${mailDomain}>`,
    };
  });
  await enqueueMessages(trx, messages, formatTimestamp(now), retryUntil(now));
}

/**
 * Queues the message of an invitation, to its address (there may be no user yet). Only the
 * address is used: a name given by the inviter is not the recipient's word.
 */
export async function queueInvitation(
  trx: Trx,
  invite: { invitation: InvitationRow; product: ProductRow; inviter: UserRow },
  mailDomain: string,
  now: Date,
): Promise<void> {
  const { invitation, product, inviter } = invite;
  const message = {
    kind: 'invitation',
    invitation_id: invitation.id,
    deploy_id: null,
    user_id: null,
    to_address: invitation.email,
    subject: invitationSubject(product, inviter),
    item_ids: '[]',
    message_id: `<invitation-${invitation.id}-${now.getTime()}.${unique()}@${mailDomain}>`,
  };
  await enqueueMessages(trx, [message], formatTimestamp(now), retryUntil(now));
}

/**
 * Queues a sign-in message to a user and returns its Message-ID, which the caller records with
 * the link so that the renderer finds it when the message is sent. Retried for as long as the
 * link works at most: a link that arrives after it expired is of no use.
 */
export async function queueSignin(
  trx: Trx,
  user: UserRow,
  mailDomain: string,
  now: Date,
  validMs: number,
): Promise<string> {
  const messageId = `<signin-${user.id}-${now.getTime()}.${unique()}@${mailDomain}>`;
  const message = {
    kind: 'signin',
    deploy_id: null,
    user_id: user.id,
    to_address: mailbox(user),
    subject: SIGNIN_SUBJECT,
    item_ids: '[]',
    message_id: messageId,
  };
  await enqueueMessages(trx, [message], formatTimestamp(now), formatTimestamp(new Date(now.getTime() + validMs)));
  return messageId;
}

/**
 * Queues one message per recipient of a comment, in the comment's transaction: its author is
 * never among them. The body is rendered when the worker sends; a comment deleted before then is
 * not sent.
 */
export async function queueCommentNotifications(
  trx: Trx,
  notice: {
    product: ProductRow;
    item: Pick<ItemRow, 'id' | 'number' | 'title'>;
    commentId: number;
    recipients: UserRow[];
  },
  mailDomain: string,
  now: Date,
): Promise<void> {
  const { product, item, commentId } = notice;
  const tag = unique();
  const messages = notice.recipients.map((user) => ({
    kind: 'comment',
    comment_id: commentId,
    deploy_id: null,
    user_id: user.id,
    to_address: mailbox(user),
    subject: conversationSubject(product, item),
    item_ids: JSON.stringify([item.id]),
    message_id: `<comment-${commentId}-${user.id}.${tag}@${mailDomain}>`,
  }));
  await enqueueMessages(trx, messages, formatTimestamp(now), retryUntil(now));
}

/** Queues the message telling the blocked item's assignee of a new block, in the block's transaction. */
export async function queueBlockNotification(
  trx: Trx,
  notice: {
    product: ProductRow;
    blockId: number;
    blocker: Pick<ItemRow, 'number' | 'title'>;
    blocked: Pick<ItemRow, 'id' | 'number' | 'title'>;
    assignee: UserRow;
  },
  mailDomain: string,
  now: Date,
): Promise<void> {
  const { product, blockId, blocker, blocked, assignee } = notice;
  const message = {
    kind: 'block',
    block_id: blockId,
    deploy_id: null,
    user_id: assignee.id,
    to_address: mailbox(assignee),
    subject: blockSubject(product, blocked, blocker),
    item_ids: JSON.stringify([blocked.id]),
    message_id: `<block-${blockId}-${now.getTime()}.${unique()}@${mailDomain}>`,
  };
  await enqueueMessages(trx, [message], formatTimestamp(now), retryUntil(now));
}

/**
 * Queues the explanation of a refused inbound message to its sender (an address, perhaps of no
 * user), in the transaction that records the refusal; `subject` answers the sender's own.
 */
export async function queueRefusalExplanation(
  trx: Trx,
  notice: { refusalId: number; address: string; subject: string },
  mailDomain: string,
  now: Date,
): Promise<void> {
  const message = {
    kind: 'inbound-refusal',
    refusal_id: notice.refusalId,
    deploy_id: null,
    user_id: null,
    to_address: notice.address,
    subject: notice.subject,
    item_ids: '[]',
    message_id: `<refusal-${notice.refusalId}.${unique()}@${mailDomain}>`,
  };
  await enqueueMessages(trx, [message], formatTimestamp(now), retryUntil(now));
}
