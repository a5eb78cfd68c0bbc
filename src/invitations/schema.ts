import { Type } from '@sinclair/typebox';
import { BODY_ERRORS, doc, errorAnswers, jsonOrPage, ref, UNAVAILABLE } from '../http/documentation.js';
import { params } from '../http/params.js';
import { SMALL_FORM_LIMIT, tooLargeMessage } from '../http/parsers.js';
import { documentAs } from '../http/documentation.js';
import { ProductParams, TokenParams } from '../http/schemas.js';
import { ProductSummarySchema } from '../products/index.js';
import { UserSchema } from '../users/index.js';

export const InviteAnswerSchema = Type.Object(
  {
    email: Type.String(),
    status: Type.Union([Type.Literal('invited'), Type.Literal('member')], {
      description: '`member` when the person is a member already.',
    }),
    admin: Type.Boolean(),
  },
  {
    $id: 'InviteAnswer',
    description: 'The same whether or not the address has an account, or a message went out now.',
  },
);

/** An invitation as its link shows it to a program (presentInvitation). */
const InvitationSchema = Type.Object(
  {
    email: Type.String(),
    product: ref(ProductSummarySchema),
    invited_by: Type.String({ description: "The inviter's name." }),
    admin: Type.Boolean({ description: 'Whether accepting makes the person an admin.' }),
    has_account: Type.Boolean(),
    first_name: Type.Optional(
      Type.String({ description: 'For an address without an account: the name the inviter gave.' }),
    ),
    last_name: Type.Optional(
      Type.String({ description: 'For an address without an account: the name the inviter gave.' }),
    ),
    expires_at: Type.String(),
    accepted: Type.Boolean(),
  },
  { $id: 'Invitation', description: 'What accepting the invitation does.' },
);

const AcceptedSchema = Type.Object(
  {
    email: Type.String(),
    product: ref(ProductSummarySchema),
    admin: Type.Boolean(),
    user: ref(UserSchema),
    api_key: Type.Optional(Type.String({ description: 'For a new account only, shown this once.' })),
  },
  { $id: 'AcceptedInvitation', description: 'The person is now a member of the product.' },
);

/** A pending invitation as its product's admins see it (presentPending). */
export const PendingInvitationSchema = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    first_name: Type.String({ description: 'As the inviter gave it (may be empty).' }),
    last_name: Type.String({ description: 'As the inviter gave it (may be empty).' }),
    admin: Type.Boolean({ description: 'Whether accepting makes the person an admin.' }),
    sent_at: Type.String({ description: 'When it was last sent.' }),
    expires_at: Type.String({ description: 'When the latest link stops working.' }),
  },
  { $id: 'PendingInvitation', description: 'An invitation not yet accepted whose link still works.' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const INVITATION_SCHEMAS = [InviteAnswerSchema, InvitationSchema, AcceptedSchema, PendingInvitationSchema];

const InvitationParams = documentAs(
  Type.Object({ product_id: Type.String(), invitation_id: Type.String() }),
  Type.Object({ product_id: Type.String(), invitation_id: doc.integer("The invitation's id.") }),
);
const adminOnly = { 403: 'The caller is not an admin of the product.' };
const noPending = { 404: 'No pending invitation with that id in this product.' };

export const listInvitationsSchema = {
  summary: 'List pending invitations',
  description: 'Admins only. Invitations not yet accepted whose link still works, latest sent first (at most 500).',
  operationId: 'listInvitations',
  tags: ['people'],
  params: ProductParams,
  response: { 200: Type.Array(ref(PendingInvitationSchema), { description: 'The pending invitations.' }) },
  errors: errorAnswers([adminOnly]),
};

export const resendInvitationSchema = {
  summary: 'Send an invitation again',
  description:
    'Admins only. Mails the invitation again now with a new link, valid for 7 days; ' +
    'earlier links keep their own end.',
  operationId: 'resendInvitation',
  tags: ['people'],
  params: InvitationParams,
  response: { 200: ref(PendingInvitationSchema, { description: 'The invitation as now sent.' }) },
  errors: errorAnswers([
    {
      ...adminOnly,
      ...noPending,
      429:
        'The invitation was sent less than 15 minutes ago; or the inviter sent 20 invitations in the last hour, ' +
        'or the product received 50.',
    },
  ]),
};

export const cancelInvitationSchema = {
  summary: 'Cancel an invitation',
  description: 'Admins only. Every link sent with it stops working (410), and a message not yet sent is not sent.',
  operationId: 'cancelInvitation',
  tags: ['people'],
  params: InvitationParams,
  response: { 200: ref(PendingInvitationSchema, { description: 'The invitation, as it was when cancelled.' }) },
  errors: errorAnswers([{ ...adminOnly, ...noPending }]),
};

/** An address and two names need no more than a small form. */
const SMALL_BODY_ERRORS = { ...BODY_ERRORS, 413: tooLargeMessage(SMALL_FORM_LIMIT, 'body') };

export const invitePersonSchema = {
  summary: 'Invite a person',
  description:
    'Admins only. Mails a link, valid for 7 days and once, that makes the person a member when they accept it; ' +
    'nothing else is created until then (docs/INTERFACE.md §9).',
  operationId: 'invitePerson',
  tags: ['people'],
  params: ProductParams,
  body: params({
    email: doc.required(doc.text('The address to invite, compared case-insensitively.')),
    first_name: doc.text('For a new account.', 255),
    last_name: doc.text('For a new account.', 255),
    admin: doc.flag('Whether the person is to be an admin (sets the role of a member already).'),
  }),
  response: { 200: ref(InviteAnswerSchema, { description: 'The invitation, or the member.' }) },
  errors: errorAnswers([
    {
      400: 'email is not an email address; a name too long.',
      403: 'The caller is not an admin of the product.',
      429: 'The inviter sent 20 invitations in the last hour, or the product received 50.',
    },
    SMALL_BODY_ERRORS,
  ]),
};

const tags = ['links'];
const linkErrors = [
  { 404: 'The link was not made here.', 410: 'The invitation expired, or was accepted already.' },
  UNAVAILABLE,
];
const html = { html: [400, 404, 410] as const };
const noStore = {
  'Cache-Control': { type: 'string', description: '`no-store`: the answer may hold a name or an API key.' },
};

export const showInvitationSchema = {
  summary: 'Show an invitation',
  description:
    'Changes nothing, so mail scanners that follow links do no harm. ' +
    'Needs no credentials: the token is the credential.',
  operationId: 'showInvitation',
  tags,
  params: TokenParams,
  response: { 200: jsonOrPage(ref(InvitationSchema), 'The invitation.', noStore) },
  errors: errorAnswers(linkErrors, html),
};

export const acceptInvitationSchema = {
  summary: 'Accept an invitation',
  description:
    'Makes the person a member with the role the invitation gives; ' +
    'an address without an account gets one, and its API key once.',
  operationId: 'acceptInvitation',
  tags,
  params: TokenParams,
  body: params({
    first_name: doc.text('For a new account: its first name, instead of the one the invitation gives.', 255),
    last_name: doc.text('For a new account: its last name, instead of the one the invitation gives.', 255),
  }),
  response: { 200: jsonOrPage(ref(AcceptedSchema), 'The new membership.', noStore) },
  errors: errorAnswers(
    [
      { 400: 'A new account would have no name (neither the invitation nor the form gives one); a name too long.' },
      SMALL_BODY_ERRORS,
      ...linkErrors,
    ],
    html,
  ),
};
