import type { DeliveryJson, WebhookJson } from '../../webhooks/index.js';
import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';
import { fieldError, invalidAttrs, type FormState, productNav, selectOptions, tableBox, when } from './parts.js';

type Product = { id: number; name: string; admin?: boolean };

/** The add form as shown: `values` url, format and secret; `chosen` the ticked events. */
export interface WebhookForm extends FormState {
  chosen: string[];
}

export interface WebhooksView {
  product: Product;
  webhooks: WebhookJson[];
  form: WebhookForm;
  eventTypes: readonly string[];
  /** A webhook just added, with its secret, shown this once. */
  added?: { url: string; secret: string };
  /** What the last change did, said once. */
  notice?: string;
  viewer: Viewer;
}

const FORMAT_LABELS: Record<string, string> = {
  shiplog: 'Shiplog (signed JSON)',
  slack: 'Slack, Mattermost or Rocket.Chat message',
};

const invalid = invalidAttrs;

/** One webhook's row: where to, what, and whether it still gets events (why not, when disabled). */
function webhookRow(o: { productId: number; webhook: WebhookJson; viewer: Viewer }): Html {
  const w = o.webhook;
  const base = `/app/products/${o.productId}/webhooks/${w.id}`;
  const failing =
    w.consecutive_failures > 0
      ? html`<br><span class="muted">${w.consecutive_failures} failed in a row since ${when(w.failing_since)}</span>`
      : '';
  const state = w.enabled
    ? html`Enabled${failing}`
    : html`<strong>Disabled</strong> ${when(w.disabled_at)}<br><span class="muted">${w.disabled_reason ?? ''}</span>
<form method="post" action="${base}/enable">${csrfField(o.viewer)}<button type="submit">Enable</button></form>`;
  return html`<tr id="webhook-${w.id}"><td>${w.url}</td><td>${w.events.join(', ')}</td>\
<td>${FORMAT_LABELS[w.format] ?? w.format}</td><td>${state}</td>
<td><a href="${base}">Deliveries</a>
<form method="post" action="${base}/delete">${csrfField(o.viewer)}\
<button class="link" type="submit">Delete</button></form>\
</td></tr>`;
}

/** The product's webhooks and the form that adds one (its admins only). */
export function webhooksPage(v: WebhooksView): Html {
  const p = v.product.id;
  const added = v.added
    ? html`<div class="notice" role="status"><p>Webhook added for ${v.added.url}. Its signing secret, shown only \
this once; keep it with the receiver:</p>
<p><code class="key">${v.added.secret}</code></p></div>`
    : '';
  const list = v.webhooks.length
    ? tableBox(
        'Webhooks',
        html`<table class="list"><thead><tr><th>URL</th><th>Events</th><th>Format</th><th>State</th>\
<th><span class="sr-only">Actions</span></th></tr></thead><tbody>
${v.webhooks.map((webhook) => webhookRow({ productId: p, webhook, viewer: v.viewer }))}
</tbody></table>`,
      )
    : html`<p class="muted">None yet.</p>`;
  const notice = v.notice ? html`<p class="notice" role="status">${v.notice}</p>` : '';
  return html`${productNav(v.product, 'webhooks')}
${notice}${added}
<p>Webhooks tell other services about this product's changes: each event is a signed JSON POST (the
<code>Shiplog-Signature</code> header), or a message for a chat's incoming webhook. A webhook that keeps failing is
disabled, with the reason shown here.</p>
<h2>Webhooks</h2>
${list}
<h2>Add a webhook</h2>
${addForm(v)}`;
}

/** The form that adds a webhook, as typed and with what was wrong. */
function addForm(v: WebhooksView): Html {
  const s = v.form;
  // The first box carries the events' refusal: it is where the form script brings the focus.
  const event = (e: string, i: number) =>
    html`<label class="check"><input type="checkbox" id="webhook-event-${i}" name="events" value="${e}"\
${s.chosen.includes(e) ? html` checked` : ''}${i === 0 ? invalid(s, 'events') : ''}> ${e}</label>`;
  const formats = selectOptions(Object.entries(FORMAT_LABELS), s.values.format ?? 'shiplog');
  return html`<form class="webhook" method="post" action="/app/products/${v.product.id}/webhooks">${csrfField(v.viewer)}
${s.message ? html`<p class="error">${s.message}</p>` : ''}
<p><label for="webhook-url">URL</label>
<input id="webhook-url" type="text" name="url" value="${s.values.url ?? ''}" placeholder="https://example.com/shiplog" \
required${invalid(s, 'url')}>${fieldError(s, 'url')}</p>
<fieldset><legend>Events</legend>
${v.eventTypes.map(event)}
${fieldError(s, 'events')}</fieldset>
<p><label for="webhook-format">Format</label>
<select id="webhook-format" name="format"${invalid(s, 'format')}>${formats}</select>${fieldError(s, 'format')}</p>
<p><label for="webhook-secret">Secret <span class="muted">(optional: leave it empty and one is made)</span></label>
<input id="webhook-secret" type="text" name="secret" value="${s.values.secret ?? ''}" autocomplete="off"\
${invalid(s, 'secret')}>${fieldError(s, 'secret')}</p>
<p><button type="submit">Add webhook</button></p>
</form>`;
}

export interface DeliveriesView {
  product: Product;
  webhook: WebhookJson;
  deliveries: DeliveryJson[];
  total: number;
  offset: number;
  pageSize: number;
  viewer: Viewer;
  /** A delivery was just sent again. */
  replayed: boolean;
}

function deliveryRow(v: DeliveriesView, d: DeliveryJson): Html {
  const state =
    d.status === 'pending' && d.next_attempt_at
      ? html`pending<br><span class="muted">next ${when(d.next_attempt_at)}</span>`
      : d.status;
  const replay = d.replay > 0 ? html` <span class="muted">(replay)</span>` : '';
  return html`<tr><td>${when(d.created_at)}</td><td>${d.event}${replay}</td>
<td><code>${d.delivery_id}</code></td><td>${state}</td><td>${d.response_code ?? ''}</td>\
<td>${d.duration_ms === null ? '' : `${d.duration_ms} ms`}</td>
<td>${d.attempts}</td><td class="prose">${d.last_error ?? ''}</td>
<td><form method="post" action="/app/products/${v.product.id}/webhooks/${v.webhook.id}/deliveries/\
${d.delivery_id}/replay">${csrfField(v.viewer)}<button type="submit" class="secondary" \
aria-label="Replay ${d.event} ${d.delivery_id}">Replay</button></form></td></tr>`;
}

/** A webhook's deliveries, newest first, with what each receiver answered. */
export function deliveriesPage(v: DeliveriesView): Html {
  const link = (offset: number) =>
    `/app/products/${v.product.id}/webhooks/${v.webhook.id}${offset > 0 ? `?offset=${offset}` : ''}`;
  const end = v.offset + v.deliveries.length;
  const table = v.deliveries.length
    ? tableBox(
        'Deliveries',
        html`<table class="list"><thead><tr><th>When</th><th>Event</th><th>Delivery</th><th>Status</th>\
<th>Answer</th><th>Took</th><th>Attempts</th><th>Last error</th><th>Again</th></tr></thead><tbody>
${v.deliveries.map((d) => deliveryRow(v, d))}
</tbody></table>`,
      )
    : '';
  return html`${productNav(v.product, 'webhooks')}
<p><a href="/app/products/${v.product.id}/webhooks">All webhooks</a></p>
${v.replayed ? html`<p class="notice" role="status">Sent again as a new delivery, at the top of the list.</p>` : ''}
<h2>${v.webhook.url}</h2>
${v.webhook.enabled ? '' : html`<p class="error">Disabled: ${v.webhook.disabled_reason ?? ''}</p>`}
<p class="muted">${v.total} deliver${v.total === 1 ? 'y' : 'ies'}, newest first.</p>
${table}
<p class="pager">${v.offset > 0 ? html`<a href="${link(Math.max(0, v.offset - v.pageSize))}">Newer</a>` : ''}
${end < v.total ? html`<a href="${link(end)}">Older</a>` : ''}</p>`;
}
