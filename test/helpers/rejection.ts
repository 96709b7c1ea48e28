/** What `promise` rejects with; fails the test when it resolves instead. */
export async function rejection<E extends Error = Error>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (err) {
    return err as E;
  }
  throw new Error('expected a rejection, but it resolved');
}
