import type { PendingInvitation } from '../../invitations/index.js';
import { html, type Html } from './html.js';
import { csrfField, type Viewer } from './layout.js';
import {
  fieldError,
  invalidAttrs,
  type FormState,
  otherErrors,
  personName,
  productNav,
  tableBox,
  timeTag,
} from './parts.js';

export type PeopleDone = 'created' | 'invited' | 'member' | 'resent' | 'cancelled';

const SAID: Record<PeopleDone, string> = {
  created: 'Product created. Invite the people who work on it.',
  invited: 'Invitation sent.',
  member: 'Already a member: their role is as chosen.',
  resent: 'Invitation sent again.',
  cancelled: 'Invitation cancelled: its links no longer work.',
};

export interface PeopleView {
  product: { id: number; name: string; admin?: boolean };
  members: { id: number; first_name: string; last_name: string; email: string; admin: number }[];
  pending: PendingInvitation[];
  form: FormState;
  done?: PeopleDone;
  problem?: string;
  viewer: Viewer;
}

const invitationHref = (productId: number, id: number) => `/app/products/${productId}/people/invitations/${id}`;

function pendingRow(v: PeopleView, i: PendingInvitation): Html {
  const name = `${i.firstName} ${i.lastName}`.trim();
  return html`<tr><td>${i.email}${name ? html` <span class="muted">(${name})</span>` : ''}</td>\
<td>${i.admin ? 'admin' : 'member'}</td><td>${timeTag(i.sentAt)}</td><td>${timeTag(i.expiresAt)}</td>
<td class="actions"><form method="post" action="${invitationHref(v.product.id, i.id)}/resend">${csrfField(v.viewer)}\
<button type="submit" class="secondary">Send again</button></form> \
<a href="${invitationHref(v.product.id, i.id)}/cancel">Cancel\u2026</a></td></tr>`;
}

const checked = (on: boolean): Html | '' => (on ? html` checked` : '');

function inviteForm(v: PeopleView): Html {
  const s = v.form;
  const field = (name: string, label: string, type = 'text') => {
    const invalid = invalidAttrs(s, name);
    return html`<p><label for="invite-${name}">${label}</label> <input id="invite-${name}" type="${type}" \
name="${name}" value="${s.values[name] ?? ''}"${type === 'email' ? html` required` : ''}${invalid}>\
${fieldError(s, name)}</p>`;
  };
  return html`<form class="invite" method="post" action="/app/products/${v.product.id}/people">${csrfField(v.viewer)}
${s.message ? html`<p class="error" role="alert">${s.message}</p>` : ''}\
${otherErrors(s, ['email', 'first_name', 'last_name', 'admin'])}
${field('email', 'Email', 'email')}${field('first_name', 'First name')}${field('last_name', 'Last name')}
<p><label class="check"><input type="checkbox" name="admin" value="true"${checked(s.values.admin === 'true')}> \
Admin of the product</label>${fieldError(s, 'admin')}</p>
<p class="muted">They become a member when they accept the emailed link (valid 7 days).</p>
<p><button type="submit">Send invitation</button></p></form>`;
}

/** A product's members and pending invitations, and the form that invites someone (admins). */
export function peoplePage(v: PeopleView): Html {
  const members = v.members.map(
    (m) => html`<tr><td>${personName(m)}</td><td>${m.email}</td><td>${m.admin ? 'admin' : 'member'}</td></tr>`,
  );
  const pending = v.pending.length
    ? tableBox(
        'Pending invitations',
        html`<table class="list"><thead><tr><th scope="col">Email</th><th scope="col">Role</th>\
<th scope="col">Sent</th><th scope="col">Link works until</th><th scope="col">Actions</th></tr></thead>
<tbody>${v.pending.map((i) => pendingRow(v, i))}</tbody></table>`,
      )
    : html`<p class="muted">No invitation is waiting for an answer.</p>`;
  return html`${productNav(v.product, 'people')}
${v.done ? html`<p class="notice" role="status">${SAID[v.done]}</p>` : ''}\
${v.problem ? html`<p class="error" role="alert">${v.problem}</p>` : ''}
<section aria-labelledby="invite-heading"><h2 id="invite-heading">Invite someone</h2>${inviteForm(v)}</section>
<section aria-labelledby="pending-heading"><h2 id="pending-heading">Pending invitations</h2>${pending}</section>
<section aria-labelledby="members-heading"><h2 id="members-heading">Members</h2>
${tableBox(
  'Members',
  html`<table class="list"><thead><tr><th scope="col">Name</th><th scope="col">Email</th>\
<th scope="col">Role</th></tr></thead><tbody>${members}</tbody></table>`,
)}</section>`;
}

/** The step before cancelling an invitation: whom it invites, and the button that cancels it. */
export function cancelInvitationPage(o: {
  product: { id: number; name: string };
  invitation: PendingInvitation;
  viewer: Viewer;
}): Html {
  const back = `/app/products/${o.product.id}/people`;
  return html`<p>Cancel the invitation of <strong>${o.invitation.email}</strong> to ${o.product.name}? \
The links sent to them stop working; you can invite them again later.</p>
<form method="post" action="${invitationHref(o.product.id, o.invitation.id)}/cancel">${csrfField(o.viewer)}
<p><button type="submit" class="danger">Cancel the invitation</button> <a href="${back}">Keep it</a></p></form>`;
}
