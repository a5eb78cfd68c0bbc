import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { collectErrors, params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  deploymentsIn,
  listItems,
  listQuery,
  parseListFilters,
  parseListOffset,
  STATUS_NAMES,
  type ListItemsInput,
} from '../../items/index.js';
import { matrixFilters } from '../input.js';
import { asText, formErrors, productOf, sessionOf } from '../pages.js';
import { presentMatrixRows } from '../present.js';
import { deployedEnvironments } from '../repository.js';
import { sendPage } from '../session.js';
import type { FormState } from '../views/parts.js';
import { matrixPage, type MatrixFilters, type MatrixView } from '../views/where.js';
import { ProductPath } from './common.js';

/** Items per page of the matrix of what is deployed where. */
export const MATRIX_PAGE = 50;
/** Environments the matrix has columns for: the product's most recently deployed to, and those filtered on. */
export const MATRIX_ENVIRONMENTS = 12;
/** Environments the matrix suggests in its filter: the product's most recently deployed to. */
export const OFFERED_ENVIRONMENTS = 50;

/**
 * The list the matrix shows: its filters mean exactly what they mean on items.json (read by the
 * items' own rules), every status when none is named, newest first.
 */
function matrixList(filters: MatrixFilters, offset: ParamValue): ListItemsInput {
  const asked = collectErrors((field) => ({
    list: field(() => parseListFilters({ status: filters.status, not_deployed_to: filters.not_deployed_to })),
    offset: field(() => parseListOffset(offset)),
  }));
  return listQuery({
    ...asked.list,
    statuses: filters.status === undefined ? [...STATUS_NAMES] : asked.list?.statuses,
    offset: asked.offset,
    limit: MATRIX_PAGE,
    order: 'newest',
  });
}

/**
 * The matrix: one page of the product's items as the items list finds them, newest first, and
 * their latest deploy to each of the environments shown, in one query. Without `input` (its
 * filters were refused) the form alone, with the reasons.
 */
async function loadMatrix(
  app: FastifyInstance,
  o: { request: FastifyRequest; filters: MatrixFilters; form: FormState; input?: ListItemsInput },
): Promise<MatrixView> {
  const scope = o.request.scope;
  const [deployed, list] = await Promise.all([
    deployedEnvironments(app.db, scope.product.id, OFFERED_ENVIRONMENTS),
    o.input ? listItems(app.db, scope, o.input, app.listCounts) : { rows: [], total: 0 },
  ]);
  const columns = [...new Set([...(o.input?.notDeployedTo ?? []), ...deployed])];
  const environments = columns.slice(0, MATRIX_ENVIRONMENTS).sort((a, b) => a.localeCompare(b));
  const deployments = await deploymentsIn(
    app.db,
    list.rows.map((r) => r.id),
    environments,
  );
  return {
    product: productOf(scope),
    environments,
    moreEnvironments: columns.length > MATRIX_ENVIRONMENTS,
    offered: [...deployed].sort((a, b) => a.localeCompare(b)),
    rows: presentMatrixRows({ items: list.rows, environments, deployments }),
    total: list.total,
    offset: o.input?.offset ?? 0,
    pageSize: MATRIX_PAGE,
    filters: o.filters,
    statuses: STATUS_NAMES,
    form: o.form,
  };
}

async function renderMatrix(
  app: FastifyInstance,
  o: { request: FastifyRequest; reply: FastifyReply; status: number } & Parameters<typeof loadMatrix>[1],
) {
  const view = await loadMatrix(app, o);
  const title = `What is deployed where · ${o.request.scope.product.name}`;
  return sendPage(o.reply, o.status, title, matrixPage(view), sessionOf(o.request));
}

/** The matrix of the product's items and environments: which version of each runs where. */
export async function matrixRoutes(app: FastifyInstance): Promise<void> {
  const query = params({ status: Param, not_deployed_to: Param, offset: Param });
  app.get('/deploys/matrix', { schema: { ...ProductPath, querystring: query } }, async (request, reply) => {
    const p = requestParams(request);
    let filters: MatrixFilters = {};
    let input: ListItemsInput;
    try {
      filters = matrixFilters(p);
      input = matrixList(filters, p.offset);
    } catch (err) {
      const shown = formErrors(err);
      if (!shown) throw err;
      const other = Object.entries(shown.errors).find(([name]) => name !== 'status' && name !== 'not_deployed_to');
      const message = shown.message ?? (other ? `The ${other[0]} ${other[1]}.` : undefined);
      const form = { values: asText(p), errors: shown.errors, message };
      return renderMatrix(app, { request, reply, status: 400, filters, form });
    }
    const form = { values: { ...filters }, errors: {} };
    return renderMatrix(app, { request, reply, status: 200, filters, form, input });
  });
}
