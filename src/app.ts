import Fastify, { type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { ATTACHMENT_SCHEMAS, attachmentRoutes } from './attachments/index.js';
import { ACTIVITY_SCHEMAS, activityRoutes } from './activities/index.js';
import { MergeSearchIndex, SEARCH_SCHEMAS, searchRoutes } from './search/index.js';
import { poolSizes, type Config } from './config.js';
import type { Db } from './db/connection.js';
import type { UserRow } from './db/schema.js';
import { resumeSharedReadsThrough } from './db/shared-reads.js';
import {
  DEPLOY_SCHEMAS,
  deployMessageRenderer,
  deployRoutes,
  KeptDeploys,
  fillNotesHtml,
  rollbackMessageRenderer,
} from './deploys/index.js';
import {
  blockMessageRenderer,
  commentMessageRenderer,
  CONVERSATION_SCHEMAS,
  conversationRoutes,
} from './conversation/index.js';
import { HealthSchema, healthRoutes, ProbeSchema, probeRoutes } from './health.js';
import { RootSchema, rootRoutes } from './root.js';
import { InboundListener, inboundOf, refusalMessageRenderer } from './inbound/index.js';
import { answerExpectations, capConnections } from './http/connections.js';
import { closeConnectionsWhileDraining, Lifecycle } from './http/lifecycle.js';
import { documentScope } from './http/documentation.js';
import { registerErrorHandling } from './http/errors.js';
import { registerOpenApi } from './http/openapi.js';
import { registerBodyParsers } from './http/parsers.js';
import { registerRateLimits, type RequestIdentity } from './http/rate-limit.js';
import { KeptAnswers } from './kept-answers.js';
import { DEFAULT_MARKDOWN_OPTIONS, MarkdownRenderer, type MarkdownOptions } from './markdown.js';
import { registerReadTurns } from './http/read-turns.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { serverOptions } from './http/server-options.js';
import { INVITATION_SCHEMAS, invitationMessageRenderer, invitationRoutes, inviteRoutes } from './invitations/index.js';
import {
  fillDescriptionHtml,
  getItem,
  ITEM_SCHEMAS,
  itemRoutes,
  KeptItems,
  ListCounts,
  ListPages,
  ListWindows,
  pathItemNumber,
  shortUrlRoutes,
} from './items/index.js';
import {
  DEFAULT_WORKER_OPTIONS,
  emlTransport,
  MAIL_SCHEMAS,
  OutboxWorker,
  ReplyAddresses,
  SentCount,
  smtpTransport,
  UnsubscribeLinks,
  unsubscribeRoutes,
  type MailTransport,
  type WorkerOptions,
} from './mail/index.js';
import { NOTIFICATION_SCHEMAS, notificationRoutes } from './notifications/index.js';
import {
  ChangedItems,
  PRODUCT_SCHEMAS,
  productMemberRoutes,
  productRoutes,
  requireMember,
  requireMemberDocumentation,
} from './products/index.js';
import type { ProductScope } from './scope.js';
import type { Clock } from './time.js';
import { sharedSecret } from './settings.js';
import { requireUser, requireUserDocumentation, USER_SCHEMAS, userRoutes } from './users/index.js';
import {
  pageProblem,
  sessionCookieOf,
  signinMessageRenderer,
  WEB_PREFIX,
  webRoutes,
  type WebOptions,
} from './web/index.js';
import {
  DEFAULT_WEBHOOK_WORKER_OPTIONS,
  WEBHOOK_SCHEMAS,
  webhookRoutes,
  WebhookWorker,
  type WebhookWorkerOptions,
} from './webhooks/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
    config: Config;
    outbox: OutboxWorker;
    webhooks: WebhookWorker;
    /** The sent-message count of /health and /metrics, remembered between their calls. */
    sentCount: SentCount;
    unsubscribeLinks: UnsubscribeLinks;
    listCounts: ListCounts;
    /** The ids of list pages by position or creation, per product order version (see ListPages). */
    listPages: ListPages;
    /** PostgreSQL: the leading stamps of lists by time, per product revision (see ListWindows). */
    listWindows: ListWindows | undefined;
    /** Item and deploy lists kept per product revision (see KeptAnswers). */
    keptAnswers: KeptAnswers;
    /** Each item's JSON kept by its version, for lists assembled from it (see KeptItems). */
    keptItems: KeptItems;
    /** Each deploy's JSON as pages of deploys show it, kept whole (see KeptDeploys). */
    keptDeploys: KeptDeploys;
    /** Renders descriptions and notes when they are written, off the event loop (markdown.ts). */
    markdown: MarkdownRenderer;
    /** The port the SMTP listener for inbound mail listens on, once it does (MAIL_INBOUND_PORT). */
    inboundMailPort: number | undefined;
    /** Starting, ready or draining, as the readiness check tells balancers (http/lifecycle.ts). */
    lifecycle: Lifecycle;
  }
  interface FastifyRequest {
    user: UserRow;
    scope: ProductScope;
  }
}

export interface AppOptions {
  config: Config;
  db: Db;
  /** pino options, or false for none (tests). Defaults to the configured level. */
  logger?: FastifyServerOptions['logger'];
  mailTransport?: MailTransport;
  /** Start the outbox worker's timer (the server does; tests deliver by hand). */
  startWorker?: boolean;
  worker?: Partial<WorkerOptions>;
  /** Tests shorten the webhook worker's backoff. */
  webhookWorker?: Partial<WebhookWorkerOptions>;
  /** The time and timers of the background jobs (tests pass one they move by hand). */
  clock?: Clock;
  /** Listen for inbound mail on MAIL_INBOUND_PORT, if set, once the app is ready (the server does). */
  listenForMail?: boolean;
  /** Tests shorten the Markdown render deadline. */
  markdown?: Partial<MarkdownOptions>;
  /** Told of every route as it is registered: the input fuzzer checks that it covers them all. */
  onRoute?: (route: RouteOptions) => void;
}

/** Builds the whole service; the server and the tests both start here. It never listens. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, db } = options;
  const app = Fastify(serverOptions(config, options.logger, { prefix: WEB_PREFIX, answer: pageProblem }));
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  capConnections(app.server, config.maxConnections, app.log);
  answerExpectations(app.server);
  app.decorate('db', db);
  app.decorate('config', config);
  app.decorate('lifecycle', new Lifecycle());
  closeConnectionsWhileDraining(app);
  app.decorate('listCounts', new ListCounts());
  app.decorate('listPages', new ListPages());
  // On PostgreSQL, where each page is a statement planned and run by a backend on the cores the
  // service shares; on SQLite a page is a call on the one thread, and a window of a thousand
  // stamps read at once would hold that thread while changes wait. Nothing is kept when answers are not.
  app.decorate('listWindows', config.databaseUrl && config.answerCacheMb > 0 ? new ListWindows() : undefined);
  // Of the memory given to kept answers, two thirds hold whole answers and one third items' JSON.
  const answerCache = config.answerCacheMb * 1024 * 1024;
  app.decorate('keptItems', new KeptItems(answerCache / 3));
  // And a quarter besides for deploys' JSON: the history of two busy environments.
  app.decorate('keptDeploys', new KeptDeploys(answerCache / 4));
  // Renders at once: as many as the pool's connections for reads on PostgreSQL, where renders wait on the network.
  // On SQLite one answer renders at a time: its reads block the one thread anyway, and a second
  // render in between only holds a second page of objects (4 MB more at the peak, for no more answers
  // per second).
  app.decorate(
    'keptAnswers',
    new KeptAnswers((answerCache * 2) / 3, config.databaseUrl ? poolSizes(config.pgPoolMax).reads : 1, undefined, {
      db,
      items: new ChangedItems(),
    }),
  );
  app.decorateRequest('user', null as unknown as UserRow);
  app.decorateRequest('scope', null as unknown as ProductScope);
  registerSecurityHeaders(app, config);
  await registerRateLimits(app, config, requestIdentity);
  resumeSharedReadsThrough(app.db, registerReadTurns(app, config.readsPerTurn));
  const web: WebOptions = {
    cookieSecret: await sharedSecret(db, 'session_cookie_key'),
    signinKey: await sharedSecret(db, 'signin_key'),
  };
  // Markdown first: comment mail renders through it.
  setUpMarkdown(app, options);
  await setUpMail(app, options, web);
  setUpInboundMail(app, options);
  setUpWebhooks(app, options);
  setUpSearchMerge(app, options);
  registerBodyParsers(app);
  registerErrorHandling(app);
  // Before every route, /metrics included, so that the description sees them all.
  await registerOpenApi(app, { schemas: RESPONSE_SCHEMAS, hidden: [WEB_PREFIX] });
  // prom-client is loaded only where metrics are asked for.
  if (config.metricsToken) (await import('./metrics.js')).registerMetrics(app, config.metricsToken);
  await registerRoutes(app, web);
  return app;
}

/** API callers are known by their Authorization header, people on the pages by their session cookie. */
const requestIdentity: RequestIdentity = {
  credentialOf: (request) => request.headers.authorization ?? sessionCookieOf(request),
  userOf: (request) => request.user?.id ?? request.webSession?.user.id,
};

/**
 * The outbox worker, with the transport the configuration names and the renderers of the kinds
 * of message features queue; it runs on its own timer once the app is ready (if asked) and stops
 * with it.
 */
async function setUpMail(app: FastifyInstance, options: AppOptions, web: WebOptions): Promise<void> {
  const { config, db } = options;
  const transport =
    options.mailTransport ?? (config.smtpUrl ? smtpTransport(config.smtpUrl) : emlTransport(config.dataDir));
  const links = new UnsubscribeLinks(config.publicUrl, await sharedSecret(db, 'unsubscribe_key'));
  const renderers = {
    deploy: deployMessageRenderer(config.publicUrl, links),
    rollback: rollbackMessageRenderer(config.publicUrl, links),
    invitation: invitationMessageRenderer(links),
    signin: signinMessageRenderer(config.publicUrl, web.signinKey),
    comment: commentMessageRenderer({
      publicUrl: config.publicUrl,
      mailDomain: config.mailDomain,
      links,
      replies: new ReplyAddresses(links, config.mailDomain),
      markdown: app.markdown,
    }),
    block: blockMessageRenderer({ publicUrl: config.publicUrl, mailDomain: config.mailDomain }),
    'inbound-refusal': refusalMessageRenderer(config.publicUrl),
  };
  const outbox = new OutboxWorker(db, transport, config.mailFrom, links, renderers, app.log, {
    ...DEFAULT_WORKER_OPTIONS,
    leaseMs: config.mailLeaseSeconds * 1000,
    sendTimeoutMs: config.mailSendTimeoutSeconds * 1000,
    probeIntervalMs: config.mailProbeSeconds * 1000,
    // Every send ends within its deadline, so a round silent for three of them is stuck elsewhere.
    stuckRoundMs: config.mailSendTimeoutSeconds * 3000,
    clock: options.clock,
    ...options.worker,
  });
  app.decorate('outbox', outbox);
  app.decorate('sentCount', new SentCount());
  app.decorate('unsubscribeLinks', links);
  if (options.startWorker) app.addHook('onReady', async () => outbox.start());
  // A draining instance claims no more messages; those it holds end with a written outcome.
  app.lifecycle.onClosing(() => outbox.stop());
  app.addHook('onClose', async () => {
    await outbox.stop();
    transport.close();
  });
}

/**
 * The SMTP listener for replies and files sent to items' addresses (inbound/), when
 * MAIL_INBOUND_PORT is set and the app is asked to listen: it starts once the app is ready and
 * stops with it.
 */
function setUpInboundMail(app: FastifyInstance, options: AppOptions): void {
  const { config } = options;
  app.decorate('inboundMailPort', undefined);
  if (config.mailInboundPort === undefined || !options.listenForMail) return;
  const listener = new InboundListener(inboundOf(app.db, config, app.unsubscribeLinks), app.log);
  const port = config.mailInboundPort;
  app.addHook('onReady', async () => {
    app.inboundMailPort = await listener.listen(port, config.mailInboundHost);
  });
  app.addHook('onClose', async () => listener.close());
}

/** The background merge of the search index's segments, run as the workers are (see search/merge.ts). */
function setUpSearchMerge(app: FastifyInstance, options: AppOptions): void {
  const merge = new MergeSearchIndex(app.db, app.log, options.clock);
  if (options.startWorker) app.addHook('onReady', async () => merge.start());
  app.addHook('onClose', async () => merge.stop());
}

/** The webhook worker, with the configured deadline, lease and guard; it runs and stops as the mail worker does. */
function setUpWebhooks(app: FastifyInstance, options: AppOptions): void {
  const { config } = options;
  const worker = new WebhookWorker(app.db, app.log, {
    ...DEFAULT_WEBHOOK_WORKER_OPTIONS,
    timeoutMs: config.webhookTimeoutSeconds * 1000,
    leaseMs: config.webhookLeaseSeconds * 1000,
    disableAfterFailures: config.webhookDisableAfterFailures,
    allowPrivate: config.webhooksAllowPrivate,
    retentionMs: config.webhookRetentionDays * 24 * 3600_000,
    stuckRoundMs: config.webhookTimeoutSeconds * 3000,
    ...(options.clock ? { jobClock: options.clock, clock: () => options.clock!.now() } : {}),
    ...options.webhookWorker,
  });
  app.decorate('webhooks', worker);
  if (options.startWorker) app.addHook('onReady', async () => worker.start());
  app.lifecycle.onClosing(() => worker.stop());
  app.addHook('onClose', async () => worker.stop());
}

/**
 * The Markdown renderer, and the fill of what was written before descriptions and notes were
 * rendered on write: it starts with the workers (the server's), renders a batch at a time until
 * none is left, and stops with the app.
 */
function setUpMarkdown(app: FastifyInstance, options: AppOptions): void {
  const markdown = new MarkdownRenderer({ ...DEFAULT_MARKDOWN_OPTIONS, ...options.markdown });
  app.decorate('markdown', markdown);
  const state = {
    stopped: false,
    running: Promise.resolve() as Promise<unknown>,
    filling: false,
    again: undefined as NodeJS.Timeout | undefined,
    delayMs: FILL_AFTER_DEFERRAL_MS,
  };
  const fill = (): void => {
    if (state.stopped || state.filling) return;
    state.filling = true;
    state.running = fillRenderedMarkdown(app, () => state.stopped)
      .then((rendered) => {
        // A fill that rendered nothing found the renderer still unable (no worker starts): the
        // next one waits twice as long, up to a minute, instead of trying every second for ever.
        state.delayMs = rendered > 0 ? FILL_AFTER_DEFERRAL_MS : Math.min(state.delayMs * 2, FILL_AFTER_DEFERRAL_MAX_MS);
      })
      .catch((err) => app.log.warn({ err }, 'filling rendered Markdown stopped'))
      .finally(() => {
        state.filling = false;
      });
  };
  if (options.startWorker) {
    app.addHook('onReady', async () => fill());
    // A render deferred in a burst of writes left its row without HTML: the fill takes it up a
    // moment later (one timer at a time, so a burst asks once), when the burst has likely passed.
    markdown.whenDeferred = () => {
      state.again ??= setTimeout(() => {
        state.again = undefined;
        fill();
      }, state.delayMs).unref();
    };
  }
  app.addHook('onClose', async () => {
    state.stopped = true;
    clearTimeout(state.again);
    await state.running;
    await markdown.close();
  });
}

/** How long after a deferred render the fill runs again, at first and at most. */
const FILL_AFTER_DEFERRAL_MS = 1000;
const FILL_AFTER_DEFERRAL_MAX_MS = 60_000;

/** Rows rendered by one batch of the fill: one short write transaction each. */
const FILL_BATCH = 50;

/**
 * Renders the descriptions and notes written before they were rendered on write, a batch at a time,
 * yielding between batches; returns how many it rendered. Rows not reached yet, or whose render
 * was deferred again (the renderer busy), are shown as escaped text meanwhile. Several instances
 * may fill at once: each row is kept once.
 */
export async function fillRenderedMarkdown(
  app: FastifyInstance,
  stopped: () => boolean = () => false,
): Promise<number> {
  let total = 0;
  for (const fill of [fillDescriptionHtml, fillNotesHtml]) {
    while (!stopped()) {
      const rendered = await fill(app.db, app.markdown, FILL_BATCH);
      if (rendered === 0) break;
      total += rendered;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return total;
}

/** The named schemas responses reference (each feature's, in the order features depend on each other). */
const RESPONSE_SCHEMAS = [
  ...USER_SCHEMAS,
  ...PRODUCT_SCHEMAS,
  ...WEBHOOK_SCHEMAS,
  ...ITEM_SCHEMAS,
  ...CONVERSATION_SCHEMAS,
  ...DEPLOY_SCHEMAS,
  ...INVITATION_SCHEMAS,
  ...NOTIFICATION_SCHEMAS,
  ...ATTACHMENT_SCHEMAS,
  ...MAIL_SCHEMAS,
  ...ACTIVITY_SCHEMAS,
  ...SEARCH_SCHEMAS,
  HealthSchema,
  ProbeSchema,
  RootSchema,
];

/**
 * Open routes first; the pages, under their prefix and with their own sessions; then the API,
 * behind the caller's credentials and, under a product, membership.
 */
async function registerRoutes(app: FastifyInstance, web: WebOptions): Promise<void> {
  await app.register(healthRoutes);
  await app.register(probeRoutes);
  await app.register(rootRoutes, { pages: WEB_PREFIX });
  await app.register(webRoutes, { prefix: WEB_PREFIX, ...web });
  await app.register(shortUrlRoutes);
  await app.register(unsubscribeRoutes);
  await app.register(invitationRoutes);
  await app.register(async (api) => {
    documentScope(api, requireUserDocumentation);
    await api.register(async (caller) => {
      caller.addHook('onRequest', requireUser(app.db));
      await caller.register(userRoutes);
      await caller.register(productRoutes);
      await caller.register(searchRoutes);
    });
    // The caller and the product of the path are read together (requireMember checks both).
    await api.register(async (member) => {
      member.addHook('onRequest', requireMember(app.db));
      documentScope(member, requireMemberDocumentation);
      await member.register(productMemberRoutes);
      await member.register(inviteRoutes);
      await member.register(itemRoutes);
      await member.register(conversationRoutes);
      await member.register(deployRoutes);
      await member.register(notificationRoutes);
      await member.register(webhookRoutes);
      await member.register(attachmentRoutes);
      await member.register(activityRoutes, {
        itemOf: (request) => getItem(app.db, request.scope, pathItemNumber(request)),
      });
    });
  });
}
