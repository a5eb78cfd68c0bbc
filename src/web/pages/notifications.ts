import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  notificationChoice,
  parseNotificationChoice,
  setNotificationChoice,
  type NotificationChoice,
} from '../../notifications/index.js';
import { checkToken, formErrors, productOf, sessionOf, viewerOf } from '../pages.js';
import { deployedEnvironments, neverDeployedTo } from '../repository.js';
import { sendPage } from '../session.js';
import { notificationsPage, type NotificationForm } from '../views/notifications.js';
import { ProductPath, productPath, redirectAfterPost, strings } from './common.js';
import { OFFERED_ENVIRONMENTS } from './matrix.js';

/** The choice of deploy environments: 50 of 255 characters, each up to 12 bytes percent-encoded. */
const ENVIRONMENTS_FORM_LIMIT = 256 * 1024;

/** Environments the page's script knows of, to flag a typed name nobody deploys to before it is sent. */
const KNOWN_ENVIRONMENTS = 500;

/** Deployed environments that cannot be chosen (a comma splits a list; `all` is the keyword) get no box. */
const choosable = (environment: string): boolean =>
  !environment.includes(',') && environment.trim().toLowerCase() !== 'all';

/** The page's form for a choice as it is stored. */
const choiceForm = ({ environments, comments }: NotificationChoice): NotificationForm => {
  const values = { comments: comments ? 'true' : 'false' };
  return environments === 'all'
    ? { values: { ...values, choice: 'all' }, errors: {}, chosen: [] }
    : { values: { ...values, choice: 'some' }, errors: {}, chosen: environments };
};

/** The page: the environments to tick (those deployed to lately, and those chosen), and the form as it stands. */
async function renderNotifications(
  app: FastifyInstance,
  o: { request: FastifyRequest; reply: FastifyReply; status: number; form: NotificationForm; saved?: boolean },
) {
  const scope = o.request.scope;
  const deployed = (await deployedEnvironments(app.db, scope.product.id, KNOWN_ENVIRONMENTS))
    .map((e) => e.trim())
    .filter(choosable);
  const offered = [...new Set([...deployed.slice(0, OFFERED_ENVIRONMENTS), ...o.form.chosen])].sort((a, b) =>
    a.localeCompare(b),
  );
  const view = {
    product: productOf(scope),
    offered,
    known: deployed,
    form: o.form,
    saved: o.saved ?? false,
    viewer: viewerOf(sessionOf(o.request)),
  };
  const title = `Notifications · ${scope.product.name}`;
  return sendPage(o.reply, o.status, title, notificationsPage(view), sessionOf(o.request));
}

/**
 * Which deploy environments email the signed-in person about the product: the rule and its
 * checks are the API's (notifications.json); the form's ticked boxes and typed names are one list.
 */
export async function notificationsRoutes(app: FastifyInstance): Promise<void> {
  const query = params({ saved: Param });
  app.get('/notifications', { schema: { ...ProductPath, querystring: query } }, async (request, reply) => {
    const form = choiceForm(await notificationChoice(app.db, request.scope));
    return renderNotifications(app, { request, reply, status: 200, form, saved: requestParams(request).saved === '1' });
  });

  const body = params({
    csrf: Param,
    choice: Param,
    environments: Param,
    other: Param,
    comments: Param,
    confirmed: Param,
  });
  const options = { bodyLimit: ENVIRONMENTS_FORM_LIMIT, schema: { ...ProductPath, body } };
  app.post('/notifications', options, async (request, reply) => {
    checkToken(request);
    const p = requestParams(request);
    const ticked = strings(p.environments);
    const other = strings(p.other).at(-1) ?? '';
    // A ticked box or a typed name is a choice of these, whichever button is on: a person who
    // ticks production and saves means production, not every environment.
    const all = p.choice === 'all' && ticked.length === 0 && other.trim() === '';
    // The box's hidden companion sends false; ticked, the box's own true comes after it. A form
    // without either leaves the choice as it is.
    const comments = strings(p.comments).at(-1);
    const values = { choice: all ? 'all' : 'some', other, ...(comments === undefined ? {} : { comments }) };
    try {
      const change = parseNotificationChoice({ environments: all ? 'all' : [...ticked, other], comments });
      const unconfirmed = await namesToConfirm(app, request, change.environments, strings(p.confirmed));
      if (unconfirmed.length) {
        const form = { values, chosen: ticked, errors: {}, unknown: unconfirmed };
        return renderNotifications(app, { request, reply, status: 200, form });
      }
      await app.db.transaction().execute((trx) => setNotificationChoice(trx, request.scope, change));
    } catch (err) {
      const shown = formErrors(err);
      if (!shown) throw err;
      const form = { values, chosen: ticked, ...shown };
      return renderNotifications(app, { request, reply, status: 400, form });
    }
    return redirectAfterPost(reply, productPath(request, '/notifications?saved=1'));
  });
}

/**
 * The names newly chosen that no deploy of the product went to, and that the form has not confirmed:
 * a misspelt name would otherwise be saved, and mail nobody, silently. The API takes them as they
 * are (a pipeline may be chosen before its first deploy); the page asks first.
 */
async function namesToConfirm(
  app: FastifyInstance,
  request: FastifyRequest,
  environments: NotificationChoice['environments'] | undefined,
  confirmed: string[],
): Promise<string[]> {
  if (!Array.isArray(environments)) return [];
  const stored = (await notificationChoice(app.db, request.scope)).environments;
  const added = environments.filter((name) => !(Array.isArray(stored) && stored.includes(name)));
  const never = await neverDeployedTo(app.db, request.scope.product.id, added);
  return never.filter((name) => !confirmed.includes(name));
}
