// Package compose checks the repository's docker-compose.yml and
// Dockerfile without a Docker engine: the compose file is loaded and
// validated with the compose-spec loader, the Dockerfile's stages are read,
// and every jetflow command line in the compose file is parsed by the real
// command-line interface. It holds only tests.
package compose
