/** The engine's collector when node runs with --expose-gc (npm run bench does), undefined otherwise. */
export const gc = (globalThis as { gc?: () => void }).gc;
