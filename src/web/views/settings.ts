import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';

/**
 * The API key of the signed-in person (how clients use it, a button for a new one, shown once),
 * and signing out everywhere.
 */
export function settingsPage({ viewer, newKey }: { viewer: Viewer; newKey?: string }): Html {
  const key = newKey
    ? html`<p class="notice">Your new API key, shown only this once; keep it somewhere safe. \
The old key no longer works.</p>
<p><code class="key">${newKey}</code></p>`
    : html`<p>Shiplog keeps only a fingerprint of your API key, so it cannot show it again. \
If you have lost it, or it may
have leaked, make a new one: the old one stops working at once.</p>`;
  return html`<h2>API key</h2>
${key}
<p class="muted">Deploy scripts and other clients sign in with HTTP Basic (user name ${viewer.email}, \
the key as the
password) or with <code>Authorization: Bearer</code> and the key.</p>
<form method="post" action="/app/settings/api-key">${csrfField(viewer)}\
<button type="submit">Make a new API key</button></form>
<p class="muted">A new key also signs you out in every other browser.</p>
<h2>Sessions</h2>
<p>Signed in somewhere you no longer are, or on a computer that is not yours? \
Sign out in every browser at once, this one included.</p>
<form method="post" action="/app/settings/sign-out-everywhere">${csrfField(viewer)}\
<button type="submit">Sign out everywhere</button></form>`;
}
