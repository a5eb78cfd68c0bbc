import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';
import { fieldError, invalidAttrs, type FormState, productNav } from './parts.js';

/**
 * The form as shown: `values.choice` is `all` or `some`, `values.other` the typed names, `values.comments`
 * `true` or `false`; `chosen` the ticked environments.
 */
export interface NotificationForm extends FormState {
  chosen: string[];
  /** Chosen names nobody has deployed to, to be confirmed before they are saved. */
  unknown?: string[];
}

export interface NotificationsView {
  product: { id: number; name: string };
  /** Environments offered as boxes to tick: those the product was deployed to lately, and those chosen. */
  offered: string[];
  /** Every environment deployed to (the latest 500): the script flags a typed name not among them. */
  known: string[];
  form: NotificationForm;
  saved: boolean;
  viewer: Viewer;
}

/**
 * Which of the product's deploy environments email the signed-in person, and whether comments do
 * (the API's notifications.json).
 */
export function notificationsPage(v: NotificationsView): Html {
  const s = v.form;
  const some = s.values.choice === 'some';
  const invalid = invalidAttrs(s, 'environments');
  const box = (e: string) =>
    html`<li><label class="check"><input type="checkbox" name="environments" value="${e}"\
${s.chosen.includes(e) ? html` checked` : ''}> ${e}</label></li>`;
  const commentsBox = html`<label class="check"><input type="checkbox" name="comments" value="true"${
    s.values.comments === 'false' ? '' : html` checked`
  }> Email me the comments on items I follow</label>`;
  const offered = v.offered.length
    ? html`<ul class="environments">${v.offered.map(box)}</ul>`
    : html`<p class="muted">Nothing of this product has been deployed yet.</p>`;
  return html`${productNav(v.product, 'notifications')}
${v.saved ? html`<p class="notice" role="status">Saved.</p>` : ''}
<p>When items you follow are deployed or commented on, Shiplog emails you about them. Choose which of this
product's environments do; the other environments' deploys are still recorded and shown, without mail to you.</p>
<form class="notifications" method="post" action="/app/products/${v.product.id}/notifications">${csrfField(v.viewer)}
${s.message ? html`<p class="error">${s.message}</p>` : ''}
<fieldset><legend>Email me about deploys to</legend>
<p><label class="check"><input type="radio" name="choice" value="all"${some ? '' : html` checked`}> \
All environments</label></p>
<p><label class="check"><input type="radio" name="choice" value="some"${some ? html` checked` : ''}> \
Only these environments:</label></p>
${offered}
<p><label for="other-environments">Other environments \
<span class="muted">(comma-separated, exactly as deploys name them)</span></label>
<input id="other-environments" type="text" name="other" value="${s.values.other ?? ''}"${invalid} \
data-known="${JSON.stringify(v.known)}">${fieldError(s, 'environments')}
<span class="field-warning" id="environments-warning" aria-live="polite"></span></p>
${confirmUnknown(s.unknown ?? [])}
</fieldset>
<fieldset><legend>Comments</legend>
<p><input type="hidden" name="comments" value="false">${commentsBox}${fieldError(s, 'comments')}</p>
</fieldset>
<p><button type="submit">Save</button></p>
</form>
<script src="/app/notifications.js" defer></script>`;
}

/**
 * The step before saving names no deploy went to (a misspelling mails nothing, ever): each is
 * kept only when its box is ticked, so a form sent again as it was asks again.
 */
function confirmUnknown(unknown: string[]): Html | '' {
  if (!unknown.length) return '';
  const box = (name: string) =>
    html`<li><label class="check"><input type="checkbox" name="confirmed" value="${name}"> \
Keep <strong>${name}</strong></label></li>`;
  return html`<div class="confirm" id="confirm-environments" role="alert">
<p>Nothing of this product has been deployed to ${unknown.length === 1 ? 'this environment' : 'these environments'} \
yet, so nothing was saved. Deploys email you only when their environment is exactly a name chosen here: \
correct a misspelt name, or tick it to keep it, then save again.</p>
<ul class="environments">${unknown.map(box)}</ul></div>`;
}
