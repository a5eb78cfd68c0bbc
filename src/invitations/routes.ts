import type { FastifyInstance, FastifyRequest } from 'fastify';
import { answer, escapeHtml, failure } from '../http/html.js';
import { digitsToId } from '../http/params.js';
import { SMALL_FORM_LIMIT } from '../http/parsers.js';
import { requestParams } from '../http/request.js';
import { presentProductSummary, requireAdmin } from '../products/index.js';
import { fullName, presentUser } from '../users/index.js';
import { parseAcceptNames, parseInvite } from './input.js';
import {
  acceptInvitationSchema,
  cancelInvitationSchema,
  invitePersonSchema,
  listInvitationsSchema,
  resendInvitationSchema,
  showInvitationSchema,
} from './schema.js';
import {
  acceptInvitation,
  cancelInvitation,
  invitationTarget,
  invitePerson,
  pendingInvitations,
  resendInvitation,
  type InvitationTarget,
  type PendingInvitation,
} from './service.js';

/** `POST /api/products/{id}/people.json`: an admin invites a person (the caller is a member by now). */
export async function inviteRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    '/api/products/:product_id/people.json',
    { bodyLimit: SMALL_FORM_LIMIT, schema: invitePersonSchema },
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
  await app.register(pendingRoutes);
}

/** A pending invitation as the API shows it to the product's admins. */
const presentPending = (i: PendingInvitation) => ({
  id: i.id,
  email: i.email,
  first_name: i.firstName,
  last_name: i.lastName,
  admin: i.admin,
  sent_at: i.sentAt,
  expires_at: i.expiresAt,
});

/** The invitation id of a path: anything but digits names none (0, the service's 404). */
const invitationIdOf = (request: FastifyRequest): number =>
  digitsToId((request.params as { invitation_id: string }).invitation_id) ?? 0;

/** The product's pending invitations, for its admins: listed, sent again, cancelled. */
async function pendingRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', async (request) => requireAdmin(request.scope));
  const one = '/api/products/:product_id/invitations/:invitation_id';
  app.get('/api/products/:product_id/invitations.json', { schema: listInvitationsSchema }, async (request) =>
    (await pendingInvitations(app.db, request.scope)).map(presentPending),
  );
  app.post(`${one}/resend.json`, { schema: resendInvitationSchema }, async (request) => {
    const id = invitationIdOf(request);
    const sent = await app.db
      .transaction()
      .execute((trx) => resendInvitation(trx, request.scope, id, app.config.mailDomain));
    app.outbox.nudge();
    return presentPending(sent);
  });
  app.delete(`${one}.json`, { schema: cancelInvitationSchema }, async (request) => {
    const id = invitationIdOf(request);
    const cancelled = await app.db.transaction().execute((trx) => cancelInvitation(trx, request.scope, id));
    return presentPending(cancelled);
  });
}

function describe(t: InvitationTarget): string {
  const role = t.invitation.admin === 1 ? ' as an admin' : '';
  return `${fullName(t.inviter)} invites ${t.invitation.email} to join ${t.product.name}${role}.`;
}

/** The page of an invitation's link: what accepting does, and the form that accepts. */
function invitationPage(t: InvitationTarget): string {
  if (t.accepted) return '<p>This invitation has already been accepted.</p>';
  const named = (field: 'first_name' | 'last_name', label: string) =>
    `<p><label for="${field}">${label}</label><input type="text" id="${field}" name="${field}" ` +
    `value="${escapeHtml(t.invitation[field])}" ` +
    'required maxlength="255"></p>';
  const account = t.user
    ? '<p>You use your existing API key.</p>'
    : '<p>Accepting also creates your Shiplog account; its API key is shown once, on the next page.</p>\n' +
      `${named('first_name', 'First name')}\n${named('last_name', 'Last name')}`;
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
<p><code class="key">${escapeHtml(apiKey)}</code></p>
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

  app.get('/invitations/:token', { schema: showInvitationSchema }, async (request, reply) => {
    try {
      const t = await invitationTarget(app.db, app.unsubscribeLinks, tokenOf(request));
      reply.header('cache-control', 'no-store');
      return answer(request, reply, 200, `Invitation to ${t.product.name}`, invitationPage(t), presentInvitation(t));
    } catch (err) {
      return failure(request, reply, err);
    }
  });

  app.post(
    '/invitations/:token',
    { bodyLimit: SMALL_FORM_LIMIT, schema: acceptInvitationSchema },
    async (request, reply) => {
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
    },
  );
}
