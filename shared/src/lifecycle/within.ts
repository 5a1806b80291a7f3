/** What `within` answers when its time ran out before the promise settled. */
export const LATE = Symbol('late');

/**
 * `pending`'s value (or its rejection), or `LATE` once `ms` have passed first; the timer is cleared either way,
 * so nothing is left waiting. `pending` itself runs on: it is not cancelled.
 */
export async function within<T>(pending: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms);
  });
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}
