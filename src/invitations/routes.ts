import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BODY_ERRORS, doc, errorAnswers, jsonOrPage, ref, UNAVAILABLE } from '../http/documentation.js';
import { answer, escapeHtml, failure } from '../http/html.js';
import { params } from '../http/params.js';
import { SMALL_FORM_LIMIT, tooLargeMessage } from '../http/parsers.js';
import { requestParams } from '../http/request.js';
import { ProductParams, TokenParams } from '../http/schemas.js';
import { presentProductSummary, ProductSummarySchema, requireAdmin } from '../products/index.js';
import { fullName, presentUser, UserSchema } from '../users/index.js';
import { parseAcceptNames, parseInvite } from './input.js';
import { acceptInvitation, invitationTarget, invitePerson, type InvitationTarget } from './service.js';

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

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const INVITATION_SCHEMAS = [InviteAnswerSchema, InvitationSchema, AcceptedSchema];

/** An address and two names need no more than a small form. */
const SMALL_BODY_ERRORS = { ...BODY_ERRORS, 413: tooLargeMessage(SMALL_FORM_LIMIT, 'body') };

/** `POST /api/products/{id}/people.json`: an admin invites a person (the caller is a member by now). */
export async function inviteRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    '/api/products/:product_id/people.json',
    {
      bodyLimit: SMALL_FORM_LIMIT,
      schema: {
        summary: 'Invite a person',
        description:
          'Admins only. Mails a link, valid for 7 days and once, that makes the person a member when they accept it; nothing else is created until then (docs/INTERFACE.md §9).',
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
      },
    },
    async (request) => {
      requireAdmin(request.scope);
      const input = parseInvite(requestParams(request));
      const { answer, queued } = await app.db
        .transaction()
        .execute((trx) => invitePerson(trx, request.scope, input, app.config.mailDomain));
      if (queued) app.outbox.nudge();
      return answer;
    },
  );
}

function describe(t: InvitationTarget): string {
  const role = t.invitation.admin === 1 ? ' as an admin' : '';
  return `${fullName(t.inviter)} invites ${t.invitation.email} to join ${t.product.name}${role}.`;
}

/** The page of an invitation's link: what accepting does, and the form that accepts. */
function invitationPage(t: InvitationTarget): string {
  if (t.accepted) return '<p>This invitation has already been accepted.</p>';
  const named = (field: 'first_name' | 'last_name', label: string) =>
    `<p><label>${label}<br><input name="${field}" value="${escapeHtml(t.invitation[field])}" required maxlength="255"></label></p>`;
  const account = t.user
    ? '<p>You use your existing API key.</p>'
    : `<p>Accepting also creates your Shiplog account; its API key is shown once, on the next page.</p>\n${named('first_name', 'First name')}\n${named('last_name', 'Last name')}`;
  return `<p>${escapeHtml(describe(t))}</p>
<p>Accepting makes you a member: you can then see its items, be assigned work and get mail about its deploys.</p>
<form method="post">
${account}
<button type="submit">Accept the invitation</button>
</form>`;
}

/** The page after accepting: a new account's API key, shown this once. */
function acceptedPage(apiKey: string | undefined): string {
  if (!apiKey) return '<p>Sign in with your existing API key.</p>';
  return `<p>Your account is ready. Your API key, shown only this once; keep it somewhere safe:</p>
<p><code style="font-size:1.2em">${escapeHtml(apiKey)}</code></p>
<p>Clients sign in with HTTP Basic (your email as the user name, this key as the password) or
<code>Authorization: Bearer</code> and the key. If you lose it, an operator can issue a new one.</p>`;
}

/** An invitation as its link's JSON answer shows it. */
function presentInvitation(t: InvitationTarget) {
  return {
    email: t.invitation.email,
    product: presentProductSummary(t.product),
    invited_by: fullName(t.inviter),
    admin: t.invitation.admin === 1,
    has_account: t.user !== undefined,
    ...(t.user ? {} : { first_name: t.invitation.first_name, last_name: t.invitation.last_name }),
    expires_at: t.expiresAt,
    accepted: t.accepted,
  };
}

/**
 * The link of an invitation: GET shows what accepting does (mail scanners that follow links
 * change nothing), POST accepts. HTML for browsers, JSON otherwise. The token is the credential:
 * no API key is needed, and for an address without a user there is none yet. Answers may hold an
 * API key or a name: no cache keeps them.
 */
export async function invitationRoutes(app: FastifyInstance): Promise<void> {
  const tokenOf = (request: FastifyRequest) => (request.params as { token: string }).token;

  const tags = ['links'];
  const linkErrors = [
    { 404: 'The link was not made here.', 410: 'The invitation expired, or was accepted already.' },
    UNAVAILABLE,
  ];
  const html = { html: [400, 404, 410] as const };
  const noStore = {
    'Cache-Control': { type: 'string', description: '`no-store`: the answer may hold a name or an API key.' },
  };

  const showSchema = {
    summary: 'Show an invitation',
    description:
      'Changes nothing, so mail scanners that follow links do no harm. Needs no credentials: the token is the credential.',
    operationId: 'showInvitation',
    tags,
    params: TokenParams,
    response: { 200: jsonOrPage(ref(InvitationSchema), 'The invitation.', noStore) },
    errors: errorAnswers(linkErrors, html),
  };
  app.get('/invitations/:token', { schema: showSchema }, async (request, reply) => {
    try {
      const t = await invitationTarget(app.db, app.unsubscribeLinks, tokenOf(request));
      reply.header('cache-control', 'no-store');
      return answer(request, reply, 200, `Invitation to ${t.product.name}`, invitationPage(t), presentInvitation(t));
    } catch (err) {
      return failure(request, reply, err);
    }
  });

  const acceptSchema = {
    summary: 'Accept an invitation',
    description:
      'Makes the person a member with the role the invitation gives; an address without an account gets one, and its API key once.',
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
  app.post('/invitations/:token', { bodyLimit: SMALL_FORM_LIMIT, schema: acceptSchema }, async (request, reply) => {
    try {
      const names = parseAcceptNames(requestParams(request));
      const done = await app.db
        .transaction()
        .execute((trx) => acceptInvitation(trx, app.unsubscribeLinks, tokenOf(request), names));
      reply.header('cache-control', 'no-store');
      const json = {
        email: done.user.email,
        product: presentProductSummary(done.target.product),
        admin: done.admin,
        user: presentUser(done.user, done.user.id),
        ...(done.apiKey ? { api_key: done.apiKey } : {}),
      };
      return answer(
        request,
        reply,
        200,
        `You are now a member of ${done.target.product.name}`,
        acceptedPage(done.apiKey),
        json,
      );
    } catch (err) {
      return failure(request, reply, err);
    }
  });
}
