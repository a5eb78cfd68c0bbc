import { html, type Html } from './html.js';

/** Who is signed in, as the layout shows them: their address and the session's form token. */
export interface Viewer {
  email: string;
  csrfToken: string;
}

/** The hidden field every form of a session carries (checked on every POST). */
export const csrfField = (viewer: Viewer): Html => html`<input type="hidden" name="csrf" value="${viewer.csrfToken}">`;

/** The page around every page: the stylesheet, the navigation of a signed-in person, the title. */
export function layout(title: string, body: Html, viewer?: Viewer): Html {
  const nav = viewer
    ? html`<nav aria-label="Shiplog"><a href="/app/products">Products</a> <a href="/docs">API docs</a></nav>
<a href="/app/settings">${viewer.email}</a>
<form method="post" action="/app/sign-out">${csrfField(viewer)}\
<button class="link" type="submit">Sign out</button></form>`
    : '';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} \u00b7 Shiplog</title><link rel="stylesheet" href="/app/style.css">\
<script src="/app/forms.js" defer></script></head>
<body><header><a class="brand" href="/app/">Shiplog</a>${nav}</header>
<main><h1>${title}</h1>
${body}
</main></body></html>
`;
}
