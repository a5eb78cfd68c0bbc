import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MAX_CHOSEN_ENVIRONMENTS } from './input.js';
import { EnvironmentChoiceSchema } from './present.js';

const tags = ['notifications'];
const answer = (description: string) => ({ 200: ref(EnvironmentChoiceSchema, { description }) });

export const getNotificationsSchema = {
  summary: 'Which deploys email you',
  operationId: 'getNotifications',
  tags,
  params: ProductParams,
  response: answer("The caller's choice."),
};

export const setNotificationsSchema = {
  summary: 'Choose which deploys email you',
  description: 'The answer can be posted back as it is, as JSON.',
  operationId: 'setNotifications',
  tags,
  params: ProductParams,
  body: params({
    environments: doc.required(
      doc.list(
        '`all` on its own (every environment, the default), or the environments whose deploys email you, ' +
          `matched exactly: at most ${MAX_CHOSEN_ENVIRONMENTS}, each at most 255 characters.`,
      ),
    ),
  }),
  response: answer('The choice as stored.'),
  errors: errorAnswers([
    {
      400:
        'environments is missing or empty, names all together with environments, ' +
        `more than ${MAX_CHOSEN_ENVIRONMENTS}, or one longer than 255 characters.`,
    },
    BODY_ERRORS,
  ]),
};
