# The two set-up commands of the README: `make demo` (the main job) and `make test` (every test).
# Maven selects a JDK >= 21 by itself (maven-toolchains-plugin, see pom.xml).
MVN ?= mvn -B -ntp

.PHONY: test java-test
test: java-test

java-test:
	$(MVN) verify
