# make deb: the Debian packages thpctl and thpd (debian/), built by
# `dpkg-buildpackage -us -uc -b` in a copy of the tree under build/deb/src,
# so that its results (.deb, .buildinfo, .changes), which it writes to the
# parent directory, land in build/deb/ and never beside the repository.
# The copy is the working tree as it is (tracked and new files, edits
# included), so the guest tests what is on disk. Then lintian, once per
# build, which fails the target on any error or warning (overrides carry
# their reason); the guest payload takes only linted packages.
DEB_DIR := $(BUILD)/deb
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_FILES := $(wildcard $(shell git ls-files -co --exclude-standard 2>/dev/null))
# the packages the guest installs
DEBS = $(DEB_DIR)/thpctl_$(DEB_VERSION)_$(DEB_ARCH).deb $(DEB_DIR)/thpd_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_JOBS ?= 2

deb: $(DEB_DIR)/linted

# lintian once per build: the guest only ever gets packages that passed it
$(DEB_DIR)/linted: $(DEB_DIR)/built
	lintian --fail-on error,warning --display-info \
		$(DEB_DIR)/thp-stack_$(DEB_VERSION)_$(DEB_ARCH).changes 2>&1 | \
		grep -v '^running with root privileges is not recommended' | tee $(DEB_DIR)/lintian.log; \
		exit $${PIPESTATUS[0]}
	touch $@

$(DEB_DIR)/built: $(DEB_FILES) | deps-quiet
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	git ls-files -z -co --exclude-standard | \
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b -j$(DEB_JOBS) >../build.log 2>&1 || \
		{ tail -40 ../build.log; echo "deb: dpkg-buildpackage failed (log: $(DEB_DIR)/build.log)"; exit 1; }
	@ls $(DEB_DIR)/*.deb
	touch $@

# what the guest payload needs: the packages, linted
deb-packages: $(DEB_DIR)/linted

.PHONY: deb deb-packages
