import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Ids and item numbers are 32-bit integers in storage (PostgreSQL `integer`/`serial`). A larger
 * number from a client names nothing, and is answered as such without asking the database.
 */
export const MAX_ID = 2_147_483_647;
export const storableId = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= MAX_ID;

/**
 * Table types. Portable column types only: integers, text, and integer 0/1 for booleans;
 * timestamps are ISO 8601 text in UTC with second precision (they sort as text).
 */
export interface UsersTable {
  id: Generated<number>;
  email: string;
  first_name: string;
  last_name: string;
  api_key_hash: string;
  created_at: string;
  last_login: string | null;
}

export interface ProductsTable {
  id: Generated<number>;
  name: string;
  archived: number;
  created_at: string;
  /** The last item number handed out; bumped inside the creating transaction. */
  last_number: number;
  /** Moves on every change that can change which items a list matches (see items/counts.ts). */
  items_version: number;
  /** Moves with every change to what the product's items show, or to its members (the board's cache key). */
  revision: number;
  /**
   * Moves with every change to which items a list matches, or to their order by priority or by
   * creation (every move of items_version, and resorts): what kept pages of those orders go by.
   */
  order_version: number;
}

/** An item whose JSON a change of text alone (no move of the order version) changed, at a product revision. */
export interface ItemChangesTable {
  product_id: number;
  revision: number;
  item_id: number;
}

export interface MembershipsTable {
  product_id: number;
  user_id: number;
  admin: number;
  created_at: string;
}

export interface ItemsTable {
  id: Generated<number>;
  product_id: number;
  number: number;
  type: string;
  /** Workflow rank of the status (see items/model.ts), so that priority order is an index scan. */
  status: number;
  title: string;
  who: string | null;
  what: string | null;
  why: string | null;
  description: string;
  /**
   * The description as safe HTML, rendered when it was written (markdown.ts); null on a row
   * written before, until the fill at start renders it. Lists never read it (ITEM_COLUMNS).
   */
  description_html: string | null;
  score: string;
  archived: number;
  created_by_id: number;
  assigned_to_id: number | null;
  parent_id: number | null;
  sort: number;
  close_reason: string | null;
  started_at: string | null;
  closed_at: string | null;
  accepted_at: string | null;
  created_at: string;
  last_modified: string;
  last_activity: string;
  /** Moves with every change to what the item shows (its ETag; see items/model.ts entityTag). */
  version: Generated<number>;
  /** What `counts` shows, moved with each comment, favorite and block (conversation/). */
  comments_count: Generated<number>;
  favorites_count: Generated<number>;
  /** Blocks on this item not marked unblocked. */
  blockers_count: Generated<number>;
  /** Blocks by this item not marked unblocked. */
  blocking_count: Generated<number>;
}

export interface CommentsTable {
  id: Generated<number>;
  item_id: number;
  user_id: number;
  body: string;
  /** How it came: `api`, `page` or `mail`. */
  via: Generated<string>;
  created_at: string;
  last_modified: string;
}

export interface FavoritesTable {
  id: Generated<number>;
  item_id: number;
  user_id: number;
  created_at: string;
}

/** `item_id` blocks `blocked_id` (both of `product_id`), unless `unblocked`. */
export interface BlocksTable {
  id: Generated<number>;
  product_id: number;
  item_id: number;
  blocked_id: number;
  user_id: number;
  unblocked: Generated<number>;
  created_at: string;
}

export interface AnnotationsTable {
  id: Generated<number>;
  item_id: number;
  user_id: number;
  label: string;
  action: string;
  body: string;
  created_at: string;
}

/** A member who wants no comment mail about a product's items. */
export interface CommentMailOffTable {
  product_id: number;
  user_id: number;
}

export interface ItemTagsTable {
  item_id: number;
  position: number;
  tag: string;
}

export interface FollowersTable {
  item_id: number;
  user_id: number;
  created_at: string;
}

export interface DeploysTable {
  id: Generated<number>;
  product_id: number;
  user_id: number;
  environment: string;
  version: string;
  notes: string;
  /** The notes as safe HTML, rendered when they were written; null as description_html is. */
  notes_html: string | null;
  created_at: string;
  idempotency_key: string | null;
  request_hash: string | null;
  /** 1 on a rollback: the environment runs `version` again, as an earlier deploy left it. */
  rollback: Generated<number>;
  /** Set when a later rollback undid this deploy: when, and the rollback deploy's id. */
  reverted_at: Generated<string | null>;
  reverted_by: Generated<number | null>;
  /** The receipt a retry with the deploy's Idempotency-Key answers again: a JSON array of numbers. */
  unknown_numbers: Generated<string>;
  /** JSON array of {"number", "blocked_by"}: items blocked by items not in the environment then. */
  blocked_items: Generated<string>;
  /** How many people the deploy mailed. */
  emailed: Generated<number>;
  /**
   * What a page of deploys embeds of its items: how many, and a JSON array of their summaries as
   * they were when the deploy was written, as UTF-8 bytes (deploys/summaries.ts). Null on deploys
   * from before they were kept, until a page first shows them.
   */
  item_count: Generated<number | null>;
  item_summaries: Generated<Buffer | null>;
}

export interface DeployItemsTable {
  deploy_id: number;
  item_id: number;
  /**
   * On a rollback's items: the deploy the item's entry for the environment went back to, or null
   * when the entry was reverted (no earlier deploy had the item). Null on ordinary deploys.
   */
  restored_deploy_id: Generated<number | null>;
}

/**
 * The latest deploy of an item per environment: what `deployed_to` shows. A rollback sets it back
 * to an earlier deploy, or marks it reverted (the item is no longer deployed there).
 */
export interface ItemDeploymentsTable {
  item_id: number;
  environment: string;
  deploy_id: number;
  version: string;
  deployed_at: string;
  /** The item's product, so that a list's filter reads one product's entries. */
  product_id: number;
  reverted_at: Generated<string | null>;
  /** The rollback deploy that reverted the entry. */
  reverted_by: Generated<number | null>;
  /** The item's status, kept equal to it, so that a list's filter reads the entries in its statuses. */
  status: number;
}

export interface InvitationsTable {
  id: Generated<number>;
  product_id: number;
  /** Lower case; one invitation per address and product, renewed when sent again. */
  email: string;
  /** As the inviter gave them: the name of the user that accepting creates, when there is none. */
  first_name: string;
  last_name: string;
  /** The role accepting gives. */
  admin: number;
  /** Whoever sent it last. */
  invited_by_id: number;
  created_at: string;
  /** When it was last sent; what rate limits and the daily re-send count. */
  sent_at: string;
  /** Links sent with it work until then. */
  expires_at: string;
  accepted_at: string | null;
}

export interface OutboxTable {
  id: Generated<number>;
  /**
   * `deploy` or `rollback` (deploy_id, item_ids), `invitation` (invitation_id), `signin`: what the
   * bodies are rendered from.
   */
  kind: Generated<string>;
  deploy_id: number | null;
  invitation_id: Generated<number | null>;
  /** The recipient, when the message goes to a user (invitations go to an address). */
  user_id: number | null;
  to_address: string;
  subject: string;
  /** JSON array of the ids of the recipient's items the message is about. */
  item_ids: string;
  message_id: string;
  /** pending -> sending -> sent, or failed when given up; sending past lease_until is free again. */
  status: string;
  attempts: number;
  next_attempt_at: string;
  /** After this, a temporary failure is final. */
  retry_until: string;
  lease_until: string | null;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
  unsubscribed_at: string | null;
  /** The comment a `comment` message tells of. */
  comment_id: Generated<number | null>;
  /** The block a `block` message tells of. */
  block_id: Generated<number | null>;
  /** The refused inbound message an `inbound-refusal` message explains. */
  refusal_id: Generated<number | null>;
}

/**
 * The deploy environments a member wants mail for, one row each; a member without rows for a
 * product wants mail for every environment (the default).
 */
export interface NotificationEnvironmentsTable {
  product_id: number;
  user_id: number;
  environment: string;
}

export interface SettingsTable {
  name: string;
  value: string;
}

/** A one-time sign-in link: valid until expires_at, and once (used_at). */
export interface SigninLinksTable {
  id: Generated<number>;
  user_id: number;
  /** SHA-256 of the token; the token itself is never stored. */
  token_hash: string;
  token_salt: string;
  /** The outbox message carrying the link, whose renderer makes the token again. */
  message_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Every request for a sign-in link, known address or not: what the rate limits count. */
export interface SigninRequestsTable {
  id: Generated<number>;
  email: string;
  client_ip: string;
  created_at: string;
}

/** A client address (IPv6 by /64) from which a person used a sign-in link, and when last. */
export interface SigninClientsTable {
  user_id: number;
  client_ip: string;
  used_at: string;
}

/** A signed-in browser; ends on sign-out or after a while without requests. */
export interface WebSessionsTable {
  /** SHA-256 of the session id the cookie holds. */
  id_hash: string;
  user_id: number;
  /** Every form of the session carries it; a POST without it changes nothing. */
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
}

/** A product's webhook: where its events go, which, in what form, and whether it still gets them. */
export interface WebhooksTable {
  id: Generated<number>;
  product_id: number;
  url: string;
  /** The event types it gets, comma-separated. */
  events: string;
  /** `shiplog` (signed JSON) or `slack` (an incoming-webhook message). */
  format: string;
  /** Signs every delivery; kept as given, since signing needs it (see README, Webhooks). */
  secret: string;
  created_by_id: number;
  created_at: string;
  /** Set when it stopped getting events (after repeated failures), with why; cleared when re-enabled. */
  disabled_at: string | null;
  disabled_reason: string | null;
  /** Failed attempts since the last success, and since when they have been failing. */
  consecutive_failures: Generated<number>;
  failing_since: string | null;
}

/** Something that happened to a product, as it was then: the bytes every delivery of it sends. */
export interface WebhookEventsTable {
  id: Generated<number>;
  /** The event's id in every delivery of it (replays included). */
  uid: string;
  product_id: number;
  type: string;
  /** The `shiplog` format's body, signed and sent as it is. */
  body: string;
  /** The `slack` format's body; empty for events written before it was kept. */
  slack_body: string;
  created_at: string;
}

/** One event to one webhook: pending -> sending -> delivered, or failed when given up. */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  /** The delivery's id (the Shiplog-Delivery header). */
  uid: string;
  webhook_id: number;
  event_id: number;
  /** 0 for the delivery the change queued, then 1, 2 ... for replays. */
  replay: Generated<number>;
  status: string;
  attempts: Generated<number>;
  next_attempt_at: string;
  /** After this, a temporary failure is final. */
  retry_until: string;
  /** A delivery `sending` past its lease is free for another worker. */
  lease_until: string | null;
  response_code: number | null;
  duration_ms: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

/** A file attached to an item; `bytes` is read only where the file itself is served. */
export interface AttachmentsTable {
  id: Generated<number>;
  product_id: number;
  item_id: number;
  /** Sanitized: no path, no control characters, at most 255 characters. */
  name: string;
  /** A media type as `type/subtype`, perhaps with a charset; application/octet-stream when none was usable. */
  content_type: string;
  size: number;
  created_by_id: number;
  created_at: string;
  bytes: Buffer;
}

/** A change of an item, as the activity log shows it (activities/). */
export interface ActivitiesTable {
  id: Generated<number>;
  product_id: number;
  item_id: number;
  item_number: number;
  /** Who made the change. */
  user_id: number;
  action: string;
  /** A JSON object, bounded when written: what changed, before and after. */
  meta: string;
  created_at: string;
}

/** How many activities an item has, or a product (item_id 0), kept as they are written. */
export interface ActivityCountsTable {
  product_id: number;
  item_id: number;
  count: number;
}

/** When a sender of refused mail was last sent an explanation (at most one an hour). */
export interface InboundSendersTable {
  /** Lower case. */
  address: string;
  explained_at: string;
}

/** A refused inbound message that its sender is told of. */
export interface InboundRefusalsTable {
  id: Generated<number>;
  address: string;
  reason: string;
  detail: string | null;
  recipient: string;
  subject: string;
  in_reply_to: string | null;
  created_at: string;
}

/** A message an item took by mail, by its Message-ID: a second copy of it adds nothing. */
export interface InboundMessagesTable {
  item_id: number;
  message_id: string;
  received_at: string;
}

/** A rate-limit window shared by instances on PostgreSQL (http/rate-limit.ts); ends_at in ms since the epoch. */
export interface RateLimitWindowsTable {
  key: string;
  count: number;
  ends_at: number;
}

export interface Database {
  users: UsersTable;
  products: ProductsTable;
  memberships: MembershipsTable;
  items: ItemsTable;
  item_tags: ItemTagsTable;
  followers: FollowersTable;
  deploys: DeploysTable;
  deploy_items: DeployItemsTable;
  item_deployments: ItemDeploymentsTable;
  item_changes: ItemChangesTable;
  invitations: InvitationsTable;
  outbox: OutboxTable;
  notification_environments: NotificationEnvironmentsTable;
  settings: SettingsTable;
  signin_links: SigninLinksTable;
  signin_requests: SigninRequestsTable;
  signin_clients: SigninClientsTable;
  web_sessions: WebSessionsTable;
  webhooks: WebhooksTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  comments: CommentsTable;
  favorites: FavoritesTable;
  blocks: BlocksTable;
  annotations: AnnotationsTable;
  comment_mail_off: CommentMailOffTable;
  attachments: AttachmentsTable;
  activities: ActivitiesTable;
  activity_counts: ActivityCountsTable;
  inbound_messages: InboundMessagesTable;
  rate_limit_windows: RateLimitWindowsTable;
  inbound_senders: InboundSendersTable;
  inbound_refusals: InboundRefusalsTable;
}

export type UserRow = Selectable<UsersTable>;
export type ProductRow = Selectable<ProductsTable>;
/** An item as every read but its page's sees it: without the rendered description, which can be large. */
export type ItemRow = Omit<Selectable<ItemsTable>, 'description_html'>;
export type NewItem = Insertable<ItemsTable>;
export type ItemUpdate = Updateable<ItemsTable>;
/** A deploy as every read sees it, without its rendered notes (read only where they are shown). */
export type DeployRow = Omit<Selectable<DeploysTable>, 'notes_html' | 'item_summaries' | 'item_count'>;
export type OutboxRow = Selectable<OutboxTable>;
export type InvitationRow = Selectable<InvitationsTable>;
export type SigninLinkRow = Selectable<SigninLinksTable>;
export type WebSessionRow = Selectable<WebSessionsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type WebhookEventRow = Selectable<WebhookEventsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type CommentRow = Selectable<CommentsTable>;
export type FavoriteRow = Selectable<FavoritesTable>;
export type BlockRow = Selectable<BlocksTable>;
export type AnnotationRow = Selectable<AnnotationsTable>;
/** An attachment without its bytes, as lists and answers read it. */
export type InboundRefusalRow = Selectable<InboundRefusalsTable>;
export type AttachmentRow = Omit<Selectable<AttachmentsTable>, 'bytes'>;
export type ActivityRow = Selectable<ActivitiesTable>;

/** Columns of a row type, each once; a column of the type missing from the list does not compile. */
const allColumns =
  <Row>() =>
  <const C extends readonly (keyof Row & string)[]>(
    columns: C & ([Exclude<keyof Row, C[number]>] extends [never] ? unknown : 'a column is missing'),
  ): C =>
    columns;

/**
 * What reads of items and deploys select instead of `*`: every column of ItemRow and DeployRow,
 * so that the rendered HTML beside a description or notes (up to a few hundred KB each) is read
 * only where it is shown, not by every list.
 */
export const ITEM_COLUMNS = allColumns<ItemRow>()([
  'id',
  'product_id',
  'number',
  'type',
  'status',
  'title',
  'who',
  'what',
  'why',
  'description',
  'score',
  'archived',
  'created_by_id',
  'assigned_to_id',
  'parent_id',
  'sort',
  'close_reason',
  'started_at',
  'closed_at',
  'accepted_at',
  'created_at',
  'last_modified',
  'last_activity',
  'version',
  'comments_count',
  'favorites_count',
  'blockers_count',
  'blocking_count',
]);
export const DEPLOY_COLUMNS = allColumns<DeployRow>()([
  'id',
  'product_id',
  'user_id',
  'environment',
  'version',
  'notes',
  'created_at',
  'idempotency_key',
  'request_hash',
  'rollback',
  'reverted_at',
  'reverted_by',
  'unknown_numbers',
  'emailed',
  'blocked_items',
]);

/** The same columns of a table named by an alias in a join (`items.id`, `i.id`). */
export const columnsOf = <A extends string, C extends string>(alias: A, columns: readonly C[]) =>
  columns.map((c) => `${alias}.${c}` as `${A}.${C}`);
