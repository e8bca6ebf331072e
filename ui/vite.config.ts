/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// Every asset is bundled into dist/ and embedded in the app: nothing is fetched at run time.
export default defineConfig({
  clearScreen: false,
  build: {
    target: "safari15",
    outDir: "dist",
    emptyOutDir: true,
    assetsInlineLimit: 0,
  },
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.ts"],
  },
});
