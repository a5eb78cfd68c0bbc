import type { DeployRow, ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { statusName } from '../items/model.js';
import type { Urls } from '../scope.js';

export interface DeployEmail {
  subject: string;
  text: string;
}

/** `"First Last" <email>`, quoted so that any name is a valid header. */
export function mailbox(user: UserRow): string {
  const name = `${user.first_name} ${user.last_name}`.trim().replace(/[\\"]/g, '\\$&').replace(/[\r\n]+/g, ' ');
  return name ? `"${name}" <${user.email}>` : user.email;
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\t]+/g, ' ').trim();
}

/** The message one follower gets about one deploy: only that follower's items. */
export function renderDeployEmail(
  product: ProductRow,
  deploy: DeployRow,
  deployer: UserRow,
  items: ItemRow[],
  urls: Urls,
): DeployEmail {
  const first = items[0];
  const more = items.length > 1 ? ` and ${items.length - 1} more` : '';
  const subject = oneLine(`[${product.name}] Deployed to ${deploy.environment}: #${first.number} ${first.title}${more}`);
  const who = `${deployer.first_name} ${deployer.last_name}`.trim() || deployer.email;
  const lines = [
    `${who} deployed ${deploy.version ? `version ${deploy.version} ` : ''}to ${deploy.environment} at ${deploy.created_at}.`,
    '',
    items.length === 1 ? 'The item you follow in this deploy:' : `The ${items.length} items you follow in this deploy:`,
    '',
  ];
  for (const item of items) {
    lines.push(`  #${item.number} [${item.type}] ${oneLine(item.title)} (${statusName(item.status)})`);
    lines.push(`      ${urls.publicUrl}/i/${item.product_id}/${item.number}/`);
  }
  if (deploy.notes) lines.push('', 'Notes:', '', deploy.notes);
  lines.push('', '-- ', `You receive this because you follow these items in ${product.name}.`);
  return { subject, text: lines.join('\n') + '\n' };
}
