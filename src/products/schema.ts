import { Type } from '@sinclair/typebox';
import { nextOffsetHeader } from '../http/answer-size.js';
import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MemberSchema, ProductSchema } from './present.js';

const tags = ['products'];

/**
 * `offset` of a list that is whole unless it would pass the size bound of an answer (thousands of
 * products or members): such a list ends early, and X-Sprintly-Next-Offset says where it goes on.
 */
const continued = params({
  offset: doc.integer('Entries to skip, to continue a list that ended early (X-Sprintly-Next-Offset); 0 by default.'),
});
const OFFSET_ERROR = { 400: 'A malformed offset.' };

/** A product and a member, serialized on their own to fit a list within the size bound of an answer. */
export const ONE_PRODUCT = ref(ProductSchema);
export const ONE_MEMBER = ref(MemberSchema);

export const listProductsSchema = {
  summary: 'List your products',
  operationId: 'listProducts',
  tags,
  querystring: continued,
  response: {
    200: Type.Array(ref(ProductSchema), {
      description: 'The products the caller is a member of, by id.',
      headers: nextOffsetHeader,
    }),
  },
  errors: errorAnswers([OFFSET_ERROR]),
};

export const createProductSchema = {
  summary: 'Create a product',
  description: 'The caller becomes its admin member.',
  operationId: 'createProduct',
  tags,
  body: params({ name: doc.required(doc.text("The product's name.", 255)) }),
  response: { 200: ref(ProductSchema, { description: 'The new product.' }) },
  errors: errorAnswers([{ 400: 'name is missing, empty or too long.' }, BODY_ERRORS]),
};

export const getProductSchema = {
  summary: 'Fetch a product',
  operationId: 'getProduct',
  tags,
  params: ProductParams,
  response: { 200: ref(ProductSchema, { description: 'The product.' }) },
};

export const listPeopleSchema = {
  summary: "List a product's members",
  operationId: 'listPeople',
  tags: ['people'],
  params: ProductParams,
  querystring: continued,
  response: {
    200: Type.Array(ref(MemberSchema), { description: 'The members, by user id.', headers: nextOffsetHeader }),
  },
  errors: errorAnswers([OFFSET_ERROR]),
};
