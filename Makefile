# Thin wrapper over CMake/CTest. `make` builds, `make test` builds and runs the
# tests, `make quickstart` builds and trains configs/quickstart.yaml. Each first
# installs any missing Debian packages (scripts/install-deps.sh).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test quickstart install clean

all: build

deps:
	@./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

quickstart: build
	$(BUILD)/bin/tessel run configs/quickstart.yaml

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
