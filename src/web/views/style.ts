/** The one stylesheet of the pages, served by Shiplog itself (`/app/style.css`). */
export const STYLESHEET = `
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d2327; background: #f6f7f9; }
a { color: #0b5cad; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; padding: .6rem 1rem; background: #1d2327; color: #fff; }
header a { color: #fff; text-decoration: none; }
header .brand { font-weight: 700; margin-right: auto; }
header form { margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .5rem 0 1rem; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
input[type=email], input[type=text] { width: 100%; max-width: 28rem; padding: .5rem; font: inherit; border: 1px solid #a7aaad; border-radius: 4px; }
button { font: inherit; padding: .45rem 1rem; border: 1px solid #0b5cad; border-radius: 4px; background: #0b5cad; color: #fff; cursor: pointer; }
button.link { background: none; border: none; color: inherit; padding: 0; text-decoration: underline; }
.notice { padding: .75rem 1rem; border-radius: 4px; background: #e7f1fb; border: 1px solid #b6d4f2; }
.error { padding: .75rem 1rem; border-radius: 4px; background: #fbeaea; border: 1px solid #e6b3b3; }
code.key { display: inline-block; padding: .3rem .5rem; font-size: 1.1rem; background: #fff; border: 1px solid #ccc; word-break: break-all; }
ul.products { list-style: none; padding: 0; margin: 0; }
ul.products li { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: .75rem 1rem; margin-bottom: .75rem; }
ul.products .name { font-weight: 600; }
ul.counts { display: flex; flex-wrap: wrap; gap: .25rem .75rem; list-style: none; padding: 0; margin: .25rem 0 0; font-size: .9rem; color: #50575e; }
.muted { color: #646970; font-size: .9rem; }
`;
