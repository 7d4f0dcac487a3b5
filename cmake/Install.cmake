# install() rules and the two Debian packages (cpack -G DEB), one CPack
# component each:
#   sidecar -> ptygate-sidecar: for sandbox VM images, with its example
#              config
#   gateway -> ptygate-gateway: the host's gateway, the ptygate CLI, the
#              example config and the web page
# Binaries go under the prefix (cpack: /usr). The config and the state
# directory are where the units look for them, /etc/ptygate and
# /var/lib/ptygate, whatever the prefix.
include(GNUInstallDirs)

set(PTG_WEBDIR ${CMAKE_INSTALL_DATADIR}/ptygate/web)

install(TARGETS ptygate-sidecar RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT sidecar)
install(TARGETS ptygate-gateway ptygate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT gateway)

# The web page is built apart (scripts/build-web.sh, needs npm) into
# web/dist, which a fresh clone lacks: installed only if built, so the
# build and the packages never need npm. The gateway's unit then serves it
# (cmake/InstallUnit.cmake adds --static-dir).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/web/dist/ DESTINATION ${PTG_WEBDIR}
        COMPONENT gateway OPTIONAL)
if(NOT EXISTS ${CMAKE_SOURCE_DIR}/web/dist/index.html)
  message(WARNING "web/dist is not built: the install and the gateway package "
                  "have no web page (scripts/build-web.sh builds it)")
endif()

# The Grafana dashboard of the gateway's metrics (docs/gateway.md,
# "Metrics"), for operators to import.
install(FILES ${CMAKE_SOURCE_DIR}/deploy/grafana/ptygate-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ptygate/grafana COMPONENT gateway)

# The example configs, Debian conffiles in the packages (packaging/*/
# conffiles). A `cmake --install` over an existing /etc/ptygate keeps the
# site's edited files rather than overwriting them with the examples.
function(ptg_install_config component)
  install(CODE "foreach(f ${ARGN})
      if(EXISTS \"\$ENV{DESTDIR}/etc/ptygate/\${f}\")
        message(STATUS \"Keeping: \$ENV{DESTDIR}/etc/ptygate/\${f}\")
      else()
        file(INSTALL \"${CMAKE_SOURCE_DIR}/deploy/config/\${f}\"
             DESTINATION /etc/ptygate) # file(INSTALL) adds DESTDIR
      endif()
    endforeach()" COMPONENT ${component})
endfunction()
ptg_install_config(gateway gateway.conf instances)
ptg_install_config(sidecar sidecar.conf)
# /var/lib/ptygate holds the sealed state and its key (root's, 0700: the
# sessions run as another user and must not read it); the sidecar's unit
# has it as StateDirectory= with the same mode.
install(CODE "file(MAKE_DIRECTORY \"\$ENV{DESTDIR}/var/lib/ptygate\")
  execute_process(COMMAND chmod 0700 \"\$ENV{DESTDIR}/var/lib/ptygate\"
                  COMMAND_ERROR_IS_FATAL ANY)"
        COMPONENT sidecar)

# ptg_install_unit(NAME COMPONENT [WEBDIR]): see cmake/InstallUnit.cmake.
# After the web page's install() above, so it can see whether there is one.
function(ptg_install_unit name component webdir)
  install(CODE "execute_process(COMMAND \"${CMAKE_COMMAND}\"
      -DUNIT_SRC=${CMAKE_SOURCE_DIR}/deploy/systemd/${name}
      -DUNIT_NAME=${name} \"-DPREFIX=\${CMAKE_INSTALL_PREFIX}\"
      -DBINDIR=${CMAKE_INSTALL_BINDIR} -DWEBDIR=${webdir}
      -P ${CMAKE_SOURCE_DIR}/cmake/InstallUnit.cmake
      COMMAND_ERROR_IS_FATAL ANY)" COMPONENT ${component})
endfunction()
ptg_install_unit(ptygate-sidecar.service sidecar "")
ptg_install_unit(ptygate-gateway.service gateway ${PTG_WEBDIR})

# The manual pages, made at build time by the binaries themselves from
# their option tables: each daemon's NAME.8 from --help-man and NAME.conf.5
# (the config file) from --help-man-conf (shared/opttab.h); the CLI's
# ptygate.1 from `ptygate --help-man` (cli/manpage.c).
set(man_out ${CMAKE_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${man_out})
set(man_pages)
foreach(page "ptygate-sidecar|sidecar|ptygate-sidecar.8|--help-man|man8"
             "ptygate-sidecar|sidecar|ptygate-sidecar.conf.5|--help-man-conf|man5"
             "ptygate-gateway|gateway|ptygate-gateway.8|--help-man|man8"
             "ptygate-gateway|gateway|ptygate-gateway.conf.5|--help-man-conf|man5"
             "ptygate|gateway|ptygate.1|--help-man|man1")
  string(REPLACE "|" ";" page "${page}")
  list(GET page 0 bin)
  list(GET page 1 component)
  list(GET page 2 file)
  list(GET page 3 flag)
  list(GET page 4 dir)
  add_custom_command(
    OUTPUT ${man_out}/${file}.gz
    COMMAND sh -c "\"$0\" $1 | gzip -9n > \"$2\"" $<TARGET_FILE:${bin}> ${flag}
            ${man_out}/${file}.gz
    DEPENDS ${bin}
    COMMENT "${bin} ${flag}"
    VERBATIM)
  list(APPEND man_pages ${man_out}/${file}.gz)
  install(FILES ${man_out}/${file}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/${dir}
          COMPONENT ${component})
endforeach()
add_custom_target(man ALL DEPENDS ${man_pages})

# --- cpack -G DEB ---------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ptygate)
set(CPACK_PACKAGE_VENDOR ptygate)
set(CPACK_PACKAGE_CONTACT "ptygate maintainers <ptygate@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL sidecar gateway)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# Library dependencies from the binaries (dpkg-shlibdeps, in dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Stripped like Debian's own packages (the build tree keeps the symbols).
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_SIDECAR_PACKAGE_NAME ptygate-sidecar)
set(CPACK_COMPONENT_SIDECAR_DESCRIPTION
    "ptygate sidecar: the terminal sessions of a sandbox VM\n Owns the terminal sessions of one sandbox VM and serves them to the\n host's ptygate-gateway over vsock. Install it in the VM image; its\n systemd unit is enabled on install.")
# postinst creates the unit's User= (agent) with adduser if the image lacks it.
set(CPACK_DEBIAN_SIDECAR_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_SIDECAR_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/sidecar/conffiles
    ${CMAKE_SOURCE_DIR}/packaging/sidecar/postinst
    ${CMAKE_SOURCE_DIR}/packaging/sidecar/prerm
    ${CMAKE_SOURCE_DIR}/packaging/sidecar/postrm)

set(CPACK_DEBIAN_GATEWAY_PACKAGE_NAME ptygate-gateway)
set(CPACK_COMPONENT_GATEWAY_DESCRIPTION
    "ptygate gateway and the ptygate CLI\n WebSocket (pty-ws/v1) and REST access to the terminal sessions of\n sandbox VMs, with the ptygate client, an example config in\n /etc/ptygate and the browser terminal page. Edit the config, then\n systemctl enable --now ptygate-gateway.")
set(CPACK_DEBIAN_GATEWAY_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/gateway/conffiles
    ${CMAKE_SOURCE_DIR}/packaging/gateway/postinst
    ${CMAKE_SOURCE_DIR}/packaging/gateway/prerm
    ${CMAKE_SOURCE_DIR}/packaging/gateway/postrm)

include(CPack)
