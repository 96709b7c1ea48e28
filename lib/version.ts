/** This package's version, as sent in clientInfo. A test keeps it equal to package.json's. */
export const VERSION = '0.1.0';
