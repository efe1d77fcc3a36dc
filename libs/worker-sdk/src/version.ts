export const SDK_VERSION = '0.5.0';
