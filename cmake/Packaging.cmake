# Man pages and the Debian package (`cpack -G DEB` in the build directory; scripts/package-test.sh
# builds, installs and runs it). The package holds the two libraries and softrdma-roced in
# their private folder (SR_PRIVATE_LIBDIR, /usr/lib/softrdma), the launcher in /usr/bin, the
# man pages softrdma(1) and softrdma(7), the copyright file and the changelog; no headers: the
# ABI is rdma-core's, whose headers libibverbs-dev and librdmacm-dev ship.

# Man pages, compressed as Debian policy wants them (gzip -9n: no name, no time stamp).
set(SR_MAN_OUT ${PROJECT_BINARY_DIR}/man)
set(SR_MAN_GZ "")
foreach(page softrdma.1 softrdma.7)
  string(REGEX REPLACE ".*\\." "" section ${page})
  add_custom_command(OUTPUT ${SR_MAN_OUT}/${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${SR_MAN_OUT}
    COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/docs/man/${page} > ${SR_MAN_OUT}/${page}.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/${page} VERBATIM)
  list(APPEND SR_MAN_GZ ${SR_MAN_OUT}/${page}.gz)
  install(FILES ${SR_MAN_OUT}/${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()

# The Debian changelog of this package, native (no Debian revision), so named changelog.gz:
# one entry for the version being built.
string(TIMESTAMP SR_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${CMAKE_CURRENT_LIST_DIR}/changelog.in ${SR_MAN_OUT}/changelog @ONLY)
add_custom_command(OUTPUT ${SR_MAN_OUT}/changelog.gz
  COMMAND gzip -9n -c ${SR_MAN_OUT}/changelog > ${SR_MAN_OUT}/changelog.gz
  DEPENDS ${SR_MAN_OUT}/changelog VERBATIM)
add_custom_target(sr_package_docs ALL DEPENDS ${SR_MAN_GZ} ${SR_MAN_OUT}/changelog.gz)
install(FILES ${SR_MAN_OUT}/changelog.gz ${CMAKE_CURRENT_LIST_DIR}/copyright
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${PROJECT_NAME})
# The documents softrdma(7) points to.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/ARCHITECTURE.md
  ${PROJECT_SOURCE_DIR}/docs/COMPATIBILITY.md ${PROJECT_SOURCE_DIR}/docs/CONFIG.md
  ${PROJECT_SOURCE_DIR}/docs/SECURITY.md
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${PROJECT_NAME})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME softrdma)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "softrdma developers")
set(CPACK_PACKAGE_CONTACT "softrdma developers <dev@softrdma.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# CPack indents the lines after the first and turns the empty one into " .".
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "RDMA verbs and RDMA CM in userspace over TCP (soft iWARP)
softrdma provides drop-in libibverbs.so.1 and librdmacm.so.1 (the rdma-core
${SR_RDMA_CORE_VERSION} ABI) that implement soft iWARP over the kernel's own TCP
sockets. Unmodified RDMA programs started with `softrdma run` use them
instead of the system's libraries: no RDMA NIC, kernel module or root needed.
Every network interface appears as one device.

The libraries live in a private folder, so they replace the system's
libraries only for programs started through the launcher.")
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/;/\\\\.git/")
include(CPack)
