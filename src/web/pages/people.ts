import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  cancelInvitation,
  invitePerson,
  parseInvite,
  pendingInvitations,
  resendInvitation,
} from '../../invitations/index.js';
import { listMembers } from '../../products/index.js';
import { asText, checkToken, formErrors, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { cancelInvitationPage, peoplePage, type PeopleDone } from '../views/people.js';
import type { FormState } from '../views/parts.js';
import { emptyForm, productPath, redirectAfterPost } from './common.js';
import { pathIdOf } from './item-conversation.js';

const DONE: readonly PeopleDone[] = ['created', 'invited', 'member', 'resent', 'cancelled'];

const InvitationPath = {
  params: {
    type: 'object',
    properties: { product_id: { type: 'string' }, invitation_id: { type: 'string' } },
  },
} as const;

/** The page: members, pending invitations, the invitation form as it stands. */
async function renderPeople(
  app: FastifyInstance,
  o: {
    request: FastifyRequest;
    reply: FastifyReply;
    status: number;
    form: FormState;
    done?: PeopleDone;
    problem?: string;
  },
) {
  const scope = o.request.scope;
  const [members, pending] = await Promise.all([
    listMembers(app.db, scope.product.id),
    pendingInvitations(app.db, scope),
  ]);
  const view = {
    product: productOf(scope),
    members,
    pending,
    form: o.form,
    done: o.done,
    problem: o.problem,
    viewer: viewerOf(sessionOf(o.request)),
  };
  return sendPage(o.reply, o.status, `People \u00b7 ${scope.product.name}`, peoplePage(view), sessionOf(o.request));
}

/**
 * A product's people, for its admins: its members, the invitations waiting for an answer (sent
 * again, or cancelled after a confirmation), and inviting someone, through the same operations
 * as the API's people.json.
 */
export async function peopleRoutes(app: FastifyInstance): Promise<void> {
  const query = params({ done: Param });
  app.get('/people', { schema: { ...InvitationPath, querystring: query } }, async (request, reply) => {
    const asked = requestParams(request).done;
    const done = DONE.find((d) => d === asked);
    return renderPeople(app, { request, reply, status: 200, form: emptyForm(), done });
  });

  const body = params({ csrf: Param, email: Param, first_name: Param, last_name: Param, admin: Param });
  app.post('/people', { schema: { ...InvitationPath, body } }, async (request, reply) => {
    checkToken(request);
    const p = requestParams(request);
    try {
      const input = parseInvite(p);
      const { answer, queued } = await app.db
        .transaction()
        .execute((trx) => invitePerson(trx, request.scope, input, app.config.mailDomain));
      if (queued) app.outbox.nudge();
      return redirectAfterPost(
        reply,
        productPath(request, `/people?done=${answer.status === 'member' ? 'member' : 'invited'}`),
      );
    } catch (err) {
      const shown = formErrors(err);
      if (!shown) throw err;
      return renderPeople(app, { request, reply, status: 400, form: { values: asText(p), ...shown } });
    }
  });

  await app.register(invitationRoutes);
}

/** One pending invitation: sent again, or cancelled after a confirmation. */
async function invitationRoutes(app: FastifyInstance): Promise<void> {
  const one = '/people/invitations/:invitation_id';
  app.post(
    `${one}/resend`,
    { schema: { ...InvitationPath, body: params({ csrf: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const id = pathIdOf(request, 'invitation_id');
      await app.db.transaction().execute((trx) => resendInvitation(trx, request.scope, id, app.config.mailDomain));
      app.outbox.nudge();
      return redirectAfterPost(reply, productPath(request, '/people?done=resent'));
    },
  );

  app.get(`${one}/cancel`, { schema: InvitationPath }, async (request, reply) => {
    const id = pathIdOf(request, 'invitation_id');
    const invitation = (await pendingInvitations(app.db, request.scope)).find((i) => i.id === id);
    if (!invitation) return redirectAfterPost(reply, productPath(request, '/people'));
    const page = cancelInvitationPage({
      product: productOf(request.scope),
      invitation,
      viewer: viewerOf(sessionOf(request)),
    });
    return sendPage(reply, 200, `Cancel an invitation \u00b7 ${request.scope.product.name}`, page, sessionOf(request));
  });

  app.post(
    `${one}/cancel`,
    { schema: { ...InvitationPath, body: params({ csrf: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const id = pathIdOf(request, 'invitation_id');
      await app.db.transaction().execute((trx) => cancelInvitation(trx, request.scope, id));
      return redirectAfterPost(reply, productPath(request, '/people?done=cancelled'));
    },
  );
}
