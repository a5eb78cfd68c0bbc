import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { NEXT_OFFSET, nextOffsetHeader, serializerOf } from '../http/answer-size.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { ProductParams } from '../http/schemas.js';
import {
  DEPLOY_ORDERS,
  DEPLOY_PAGE,
  MAX_DEPLOY_ITEMS,
  parseDeploy,
  parseDeployList,
  parseIdempotencyKey,
} from './input.js';
import { ItemSchema, type ItemJson } from '../items/index.js';
import {
  deploysWithin,
  deployWithin,
  DeployReceiptSchema,
  DeploySchema,
  presentDeploys,
  presentDryRun,
  presentReceipt,
  type DeployJson,
  type DeployReceiptJson,
} from './present.js';
import { findDeploys, planDeploy, recordDeploy } from './service.js';

// Only documents the header: parseIdempotencyKey reads and checks it.
/** How many deploys a list matches, before paging. */
const DEPLOY_COUNT = 'X-Sprintly-Deploy-Count';
const IdempotencyHeader = documentAs(
  Type.Object({}),
  Type.Object({
    'Idempotency-Key': Type.Optional(
      doc.text(
        'A retry with the same key and the same parameters records nothing and answers with the first deploy.',
        255,
      ),
    ),
  }),
);

/** A deploy, a receipt and an item, serialized on their own to fit an answer within its size bound. */
const ONE_DEPLOY = ref(DeploySchema);
const ONE_RECEIPT = ref(DeployReceiptSchema);
const ONE_ITEM = ref(ItemSchema);

export async function deployRoutes(app: FastifyInstance): Promise<void> {
  const urls = app.config;
  const tags = ['deploys'];

  app.get(
    '/api/products/:product_id/deploys.json',
    {
      schema: {
        summary: 'List deploys',
        description: `Oldest first unless order_by=newest; a page also ends before it would embed more than ${MAX_DEPLOY_ITEMS} items or pass the size bound of an answer (docs/INTERFACE.md §7.7).`,
        operationId: 'listDeploys',
        tags,
        params: ProductParams,
        querystring: params({
          environment: doc.text('Only deploys to exactly this environment; empty is no filter.', 255),
          offset: doc.integer('Deploys to skip; 0 by default.'),
          limit: doc.integer(
            `Page size: ${DEPLOY_PAGE.default} by default, above ${DEPLOY_PAGE.max} taken as ${DEPLOY_PAGE.max}.`,
            1,
          ),
          order_by: doc.choice(DEPLOY_ORDERS, '`oldest` by default.'),
        }),
        response: {
          200: Type.Array(ref(DeploySchema), {
            description: 'The page of deploys.',
            headers: {
              [DEPLOY_COUNT]: { type: 'integer', description: 'How many deploys match, before paging.' },
              ...nextOffsetHeader,
            },
          }),
        },
        errors: errorAnswers([{ 400: 'A malformed limit or offset; order_by other than oldest or newest.' }]),
      },
    },
    async (request, reply) => {
      const { filter, page } = parseDeployList(requestParams(request));
      return app.keptAnswers.answer(
        request,
        reply,
        `deploys:${JSON.stringify({ filter, page })}`,
        [DEPLOY_COUNT, NEXT_OFFSET],
        async () => {
          const { deploys, total } = await findDeploys(app.db, request.scope, filter, page);
          const budget = app.config.maxAnswerBytes;
          const serialize = {
            deploy: serializerOf<DeployJson>(reply, ONE_DEPLOY),
            item: serializerOf<ItemJson>(reply, ONE_ITEM),
          };
          const bounded = await deploysWithin(
            await presentDeploys(app.db, request.scope, deploys, urls, budget),
            serialize,
            budget,
          );
          reply.header(DEPLOY_COUNT, String(total));
          if (page.offset + bounded.count < total) reply.header(NEXT_OFFSET, String(page.offset + bounded.count));
          return Buffer.from(bounded.json);
        },
      );
    },
  );

  app.post(
    '/api/products/:product_id/deploys.json',
    {
      schema: {
        summary: 'Record a deploy',
        description:
          "One transaction records the deploy, makes it each item's latest to the environment and queues one email per follower (docs/INTERFACE.md §7.8).",
        operationId: 'createDeploy',
        tags,
        params: ProductParams,
        headers: IdempotencyHeader,
        body: params({
          environment: doc.required(doc.text('Where the items went: a name, a host, even a URL.', 255)),
          numbers: doc.required(
            doc.list(
              `The numbers of the deployed items (at most ${MAX_DEPLOY_ITEMS}); numbers that name no item are skipped. Optional on a rollback, where they choose nothing.`,
              Type.Integer({ minimum: 0 }),
            ),
          ),
          version: doc.text("The deployed software's version; required on a rollback.", 255),
          notes: doc.text('Markdown.', 65535),
          rollback: doc.strictFlag(
            'The environment runs `version` again: later deploys there are marked reverted, and their items go back to what it ran then; false by default.',
          ),
          dry_run: doc.strictFlag(
            'Answer the receipt the deploy would get, with `id` null and the recipients, and write nothing; false by default.',
          ),
        }),
        response: {
          200: ref(DeployReceiptSchema, {
            description:
              'The receipt: the deploy with its items as they are after it (those that fit the size bound of an answer, the others in omitted_numbers); for a repeated Idempotency-Key, the first receipt.',
          }),
        },
        errors: errorAnswers([
          {
            400: `An entry of numbers is not an integer; more than ${MAX_DEPLOY_ITEMS} numbers; none of them names an item of the product (not on a rollback); environment, version, notes or Idempotency-Key too long; rollback or dry_run other than true, false, 1 or 0; a rollback without version.`,
            403: 'environment is missing or empty, or numbers on a deploy that is not a rollback, as the Sprint.ly service answers.',
            422: 'The Idempotency-Key was used for a deploy with other parameters; a rollback to a version no deploy to the environment had.',
          },
          BODY_ERRORS,
        ]),
      },
    },
    async (request, reply) => {
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
          await presentDryRun(
            app.db,
            request.scope,
            input,
            await planDeploy(app.db, request.scope, input),
            urls,
            budget,
          ),
        );
      const key = parseIdempotencyKey(request.headers['idempotency-key']);
      // Rendered before the transaction opens: a render may take up to its deadline, holding nothing.
      const notesHtml = (await app.markdown.render(input.notes)) ?? undefined;
      const recorded = await app.db
        .transaction()
        .execute((trx) => recordDeploy(trx, request.scope, { ...input, notesHtml }, key, urls));
      if (recorded.created) app.outbox.nudge();
      return bounded(
        await presentReceipt(
          app.db,
          request.scope,
          recorded.deploy,
          recorded.created ? recorded.items : undefined,
          urls,
          budget,
        ),
      );
    },
  );
}
