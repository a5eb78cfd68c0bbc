import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NEXT_OFFSET, serializerOf } from '../http/answer-size.js';
import { Fingerprinted } from '../kept-answers.js';
import { requestParams } from '../http/request.js';
import { parseDeploy, parseDeployList, parseIdempotencyKey } from './input.js';
import type { ItemJson } from '../items/index.js';
import {
  deployWithin,
  presentDryRun,
  presentReceipt,
  type DeployReceiptJson,
  type ListedDeployJson,
} from './present.js';
import { createDeploySchema, DEPLOY_COUNT, listDeploysSchema, ONE_DEPLOY, ONE_ITEM, ONE_RECEIPT } from './schema.js';
import { findDeployPage, listedDeploys, planDeploy, recordDeploy } from './service.js';

const DEPLOYS = '/api/products/:product_id/deploys.json';

/** A product's deploys under `/api/products/{id}`: the list, and recording one (or a dry run of it). */
export async function deployRoutes(app: FastifyInstance): Promise<void> {
  app.get(DEPLOYS, { schema: listDeploysSchema }, async (request, reply) => listDeploys(app, request, reply));
  app.post(DEPLOYS, { schema: createDeploySchema }, async (request, reply) => createDeploy(app, request, reply));
}

/**
 * A page of deploys within the size bound of an answer, kept for the product's order version:
 * each deploy's items as the summaries kept when it was written, each deploy's JSON kept whole
 * (KeptDeploys).
 */
async function listDeploys(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<Buffer> {
  const { filter, page } = parseDeployList(requestParams(request));
  return app.keptAnswers.answer(
    request,
    reply,
    `deploys:${JSON.stringify({ filter, page })}`,
    [DEPLOY_COUNT, NEXT_OFFSET],
    async () => {
      const { scope } = request;
      const { deploys, total } = await findDeployPage(app.db, scope, filter, page);
      const bounded = await app.keptDeploys.page(app.db, {
        scope,
        deploys,
        read: (unkept) => listedDeploys(app.db, unkept),
        serialize: serializerOf<ListedDeployJson>(reply, ONE_DEPLOY),
        publicUrl: app.config.publicUrl,
        budget: app.config.maxAnswerBytes,
      });
      reply.header(DEPLOY_COUNT, String(total));
      if (page.offset + bounded.count < total) reply.header(NEXT_OFFSET, String(page.offset + bounded.count));
      return new Fingerprinted(bounded.body, bounded.fingerprint);
    },
    // Its items are as stored with each deploy: only a new deploy or rollback (which moves the
    // product's order version) changes a page, not changes of items.
    true,
  );
}

/** Records a deploy in one transaction (or plans it, for a dry run) and answers with its receipt. */
async function createDeploy(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<Buffer> {
  const urls = app.config;
  const input = parseDeploy(requestParams(request));
  const budget = app.config.maxAnswerBytes;
  // The receipt within the size bound of an answer: its items cut short if need be.
  const bounded = async (receipt: DeployReceiptJson) => {
    const serialize = {
      deploy: serializerOf<DeployReceiptJson>(reply, ONE_RECEIPT),
      item: serializerOf<ItemJson>(reply, ONE_ITEM),
    };
    reply.type('application/json; charset=utf-8');
    return Buffer.from((await deployWithin(receipt, serialize, budget, true))!);
  };
  // A dry run reads what is stored now, outside any transaction: it takes no lock and writes
  // nothing, so its Idempotency-Key is neither looked up nor used up.
  if (input.dryRun)
    return bounded(
      await presentDryRun(app.db, {
        scope: request.scope,
        urls,
        budget,
        input,
        plan: await planDeploy(app.db, request.scope, input),
      }),
    );
  const key = parseIdempotencyKey(request.headers['idempotency-key']);
  // Rendered before the transaction opens: a render may take up to its deadline, holding nothing.
  const notesHtml = (await app.markdown.render(input.notes)) ?? undefined;
  const recorded = await app.db
    .transaction()
    .execute((trx) => recordDeploy(trx, request.scope, { ...input, notesHtml }, key, urls));
  if (recorded.created) app.outbox.nudge();
  return bounded(
    await presentReceipt(app.db, {
      scope: request.scope,
      urls,
      budget,
      deploy: recorded.deploy,
      items: recorded.created ? recorded.items : undefined,
    }),
  );
}
