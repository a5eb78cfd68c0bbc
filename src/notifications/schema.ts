import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MAX_CHOSEN_ENVIRONMENTS } from './input.js';
import { EnvironmentChoiceSchema } from './present.js';

const tags = ['notifications'];
const answer = (description: string) => ({ 200: ref(EnvironmentChoiceSchema, { description }) });

export const getNotificationsSchema = {
  summary: 'Which deploys and comments email you',
  operationId: 'getNotifications',
  tags,
  params: ProductParams,
  response: answer("The caller's choice."),
};

export const setNotificationsSchema = {
  summary: 'Choose which deploys and comments email you',
  description: 'The answer can be posted back as it is, as JSON. What is not given stays as it is.',
  operationId: 'setNotifications',
  tags,
  params: ProductParams,
  body: params({
    environments: doc.list(
      '`all` on its own (every environment, the default), or the environments whose deploys email you, ' +
        `matched exactly: at most ${MAX_CHOSEN_ENVIRONMENTS}, each at most 255 characters. ` +
        'Required unless comments is given.',
    ),
    comments: doc.flag('Whether comments on the items you follow email you (true by default).'),
  }),
  response: answer('The choice as stored.'),
  errors: errorAnswers([
    {
      400:
        'comments is not true or false; environments is missing (without comments) or empty, ' +
        'names all together with environments, ' +
        `more than ${MAX_CHOSEN_ENVIRONMENTS}, or one longer than 255 characters.`,
    },
    BODY_ERRORS,
  ]),
};
