import { Type } from '@sinclair/typebox';
import { conditionalHeaders, IfNoneMatchHeader, notModifiedAnswer } from '../http/conditional.js';
import { nextOffsetHeader } from '../http/answer-size.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { ItemSchema } from '../items/index.js';
import { DEPLOY_ORDERS, DEPLOY_PAGE, MAX_DEPLOY_ITEMS } from './input.js';
import { DeployReceiptSchema, DeploySchema } from './present.js';

/** How many deploys a list matches, before paging. */
export const DEPLOY_COUNT = 'X-Sprintly-Deploy-Count';
// Only documents the header: parseIdempotencyKey reads and checks it.
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
export const ONE_DEPLOY = ref(DeploySchema);
export const ONE_RECEIPT = ref(DeployReceiptSchema);
export const ONE_ITEM = ref(ItemSchema);

const tags = ['deploys'];

export const listDeploysSchema = {
  summary: 'List deploys',
  description:
    'Oldest first unless order_by=newest; ' +
    `a page also ends before it would embed more than ${MAX_DEPLOY_ITEMS} items ` +
    'or pass the size bound of an answer (docs/INTERFACE.md §7.7).',
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
  headers: IfNoneMatchHeader,
  response: {
    200: Type.Array(ref(DeploySchema), {
      description: 'The page of deploys.',
      headers: {
        [DEPLOY_COUNT]: { type: 'integer', description: 'How many deploys match, before paging.' },
        ...nextOffsetHeader,
        ...conditionalHeaders(
          'A strong entity tag of the answer, its headers included: it changes when the page does.',
        ),
      },
    }),
    304: notModifiedAnswer,
  },
  errors: errorAnswers([{ 400: 'A malformed limit or offset; order_by other than oldest or newest.' }]),
};

const deployFields = {
  environment: doc.required(doc.text('Where the items went: a name, a host, even a URL.', 255)),
  numbers: doc.required(
    doc.list(
      `The numbers of the deployed items (at most ${MAX_DEPLOY_ITEMS}); numbers that name no item are skipped. ` +
        'Optional on a rollback, where they choose nothing.',
      Type.Integer({ minimum: 0 }),
    ),
  ),
  version: doc.text("The deployed software's version; required on a rollback.", 255),
  notes: doc.text('Markdown.', 65535),
  rollback: doc.strictFlag(
    'The environment runs `version` again: later deploys there are marked reverted, ' +
      'and their items go back to what it ran then; false by default.',
  ),
  dry_run: doc.strictFlag(
    'Answer the receipt the deploy would get, with `id` null and the recipients, ' +
      'and write nothing; false by default.',
  ),
};

export const createDeploySchema = {
  summary: 'Record a deploy',
  description:
    "One transaction records the deploy, makes it each item's latest to the environment " +
    'and queues one email per follower (docs/INTERFACE.md §7.8).',
  operationId: 'createDeploy',
  tags,
  params: ProductParams,
  headers: IdempotencyHeader,
  body: params(deployFields),
  response: {
    200: ref(DeployReceiptSchema, {
      description:
        'The receipt: the deploy with its items as they are after it ' +
        '(those that fit the size bound of an answer, the others in omitted_numbers); ' +
        'for a repeated Idempotency-Key, the first receipt.',
    }),
  },
  errors: errorAnswers([
    {
      400:
        `An entry of numbers is not an integer; more than ${MAX_DEPLOY_ITEMS} numbers; ` +
        'none of them names an item of the product (not on a rollback); ' +
        'environment, version, notes or Idempotency-Key too long; ' +
        'rollback or dry_run other than true, false, 1 or 0; a rollback without version.',
      403:
        'environment is missing or empty, or numbers on a deploy that is not a rollback, ' +
        'as the Sprint.ly service answers.',
      422:
        'The Idempotency-Key was used for a deploy with other parameters; ' +
        'a rollback to a version no deploy to the environment had.',
    },
    BODY_ERRORS,
  ]),
};
