import type { FastifyInstance } from 'fastify';
import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { ProductParams } from '../http/schemas.js';
import { MAX_CHOSEN_ENVIRONMENTS, parseEnvironmentChoice } from './input.js';
import { EnvironmentChoiceSchema, presentEnvironmentChoice } from './present.js';
import { environmentChoice, setEnvironmentChoice } from './service.js';

/** The caller's own deploy mail choice for a product (docs/INTERFACE.md §9); members only. */
export async function notificationRoutes(app: FastifyInstance): Promise<void> {
  const path = '/api/products/:product_id/notifications.json';
  const tags = ['notifications'];
  const answer = (description: string) => ({ 200: ref(EnvironmentChoiceSchema, { description }) });

  app.get(
    path,
    {
      schema: {
        summary: 'Which deploys email you',
        operationId: 'getNotifications',
        tags,
        params: ProductParams,
        response: answer("The caller's choice."),
      },
    },
    async (request) => presentEnvironmentChoice(await environmentChoice(app.db, request.scope)),
  );

  app.post(
    path,
    {
      schema: {
        summary: 'Choose which deploys email you',
        description: 'The answer can be posted back as it is, as JSON.',
        operationId: 'setNotifications',
        tags,
        params: ProductParams,
        body: params({
          environments: doc.required(
            doc.list(
              `\`all\` on its own (every environment, the default), or the environments whose deploys email you, matched exactly: at most ${MAX_CHOSEN_ENVIRONMENTS}, each at most 255 characters.`,
            ),
          ),
        }),
        response: answer('The choice as stored.'),
        errors: errorAnswers([
          {
            400: `environments is missing or empty, names all together with environments, more than ${MAX_CHOSEN_ENVIRONMENTS}, or one longer than 255 characters.`,
          },
          BODY_ERRORS,
        ]),
      },
    },
    async (request) => {
      const choice = parseEnvironmentChoice(requestParams(request));
      return presentEnvironmentChoice(
        await app.db.transaction().execute((trx) => setEnvironmentChoice(trx, request.scope, choice)),
      );
    },
  );
}
