/** The version of this host build; `known-good` records it after a clean apply. */
export const VERSION = "0.1.0";
