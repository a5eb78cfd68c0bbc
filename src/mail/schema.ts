import { Type } from '@sinclair/typebox';
import { errorAnswers, jsonOrPage, ref, UNAVAILABLE } from '../http/documentation.js';
import { SMALL_FORM_LIMIT, tooLargeMessage } from '../http/parsers.js';
import { TokenParams } from '../http/schemas.js';

const UnsubscribeLinkSchema = Type.Object(
  {
    email: Type.String({ description: 'The recipient of the message.' }),
    items: Type.Array(Type.Integer(), { description: 'The numbers of the items the link stops following.' }),
    used: Type.Boolean(),
  },
  { $id: 'UnsubscribeLink', description: 'What following the link would do.' },
);
const UnsubscribedSchema = Type.Object(
  {
    email: Type.String(),
    unfollowed: Type.Array(Type.Integer(), { description: 'The numbers of the items no longer followed.' }),
  },
  { $id: 'Unsubscribed' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const MAIL_SCHEMAS = [UnsubscribeLinkSchema, UnsubscribedSchema];

const linkErrors = [
  { 404: 'The link was not signed by this installation.', 410: 'The link was used already.' },
  UNAVAILABLE,
];
const html = { html: [404, 410] as const };
const tags = ['links'];

export const showUnsubscribeSchema = {
  summary: 'Show an unsubscribe link',
  description: "A deploy email's List-Unsubscribe link; GET changes nothing.",
  operationId: 'showUnsubscribe',
  tags,
  params: TokenParams,
  response: { 200: jsonOrPage(ref(UnsubscribeLinkSchema), 'What the link does.') },
  errors: errorAnswers(linkErrors, html),
};

export const unsubscribeSchema = {
  summary: 'Unsubscribe (one click, RFC 8058)',
  description: "The recipient stops following the message's items. Any body is accepted and ignored.",
  operationId: 'unsubscribe',
  tags,
  params: TokenParams,
  response: { 200: jsonOrPage(ref(UnsubscribedSchema), 'The items are no longer followed.') },
  errors: errorAnswers([...linkErrors, { 413: tooLargeMessage(SMALL_FORM_LIMIT, 'body') }], html),
};
