# Run by `cmake --install` and by cpack (script mode, see cmake/Install.cmake):
# writes a systemd unit from deploy/systemd with its ExecStart pointing at
# the binaries where this install puts them. The unit in deploy/ names
# /usr/local/bin (a `make install` with the default prefix); cpack
# installs with prefix /usr, so the path is only known at install time.
# In: UNIT_SRC, UNIT_NAME, PREFIX, BINDIR, WEBDIR (empty: no web page).
file(READ "${UNIT_SRC}" unit)
string(REPLACE "/usr/local/bin/" "${PREFIX}/${BINDIR}/" unit "${unit}")
# The gateway serves the page only with --static-dir; point it at the
# installed page when this install has one (web/dist was built).
if(WEBDIR AND EXISTS "$ENV{DESTDIR}${PREFIX}/${WEBDIR}/index.html")
  string(REGEX REPLACE "(ExecStart=[^\n]*ptygate-gateway[^\n]*)"
         "\\1 --static-dir ${PREFIX}/${WEBDIR}" unit "${unit}")
endif()
set(dest "$ENV{DESTDIR}${PREFIX}/lib/systemd/system")
file(MAKE_DIRECTORY "${dest}")
file(WRITE "${dest}/${UNIT_NAME}" "${unit}")
message(STATUS "Installing: ${dest}/${UNIT_NAME}")
