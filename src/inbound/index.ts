/**
 * Inbound mail: replies to an item's mail become comments, and files sent to an item's files
 * address its attachments; through the SMTP listener inside the server, or `shiplog mail receive`
 * for a pipe transport. Both go through receiveMessage.
 */
export { refusalMessageRenderer, renderRefusalEmail } from './mail.js';
export { addressForm, type RefusalReason } from './model.js';
export { exitOf, inboundOf, readBounded, receiveFromPipe, SYSEXITS } from './pipe.js';
export { EXPLAIN_EVERY_MS, receiveMessage, type Envelope, type Inbound, type Outcome } from './service.js';
export { InboundListener } from './smtp.js';
