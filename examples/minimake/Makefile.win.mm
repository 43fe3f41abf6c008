# The sample project for minimake on Windows: the same shape as
# Makefile.mm, in cmd.exe's commands (echo, type, copy, find; each runs as
# `cmd /d /s /c COMMAND`, so a command holds no double quote). Every target
# makes a file of its name but `all`, so a second run runs nothing.
# Commands write into the current directory; words.txt is a leaf, an input
# file copied there first.
#
#   a.src  b.src  words.txt
#     |      |        |
#    a.o    b.o    words.o
#       \    |     /
#          app                 (the three .o files, one after another)
#        /     \
#    report    check           (report: app's lines with an e in them;
#        \     /                check: app has a line with fig)
#          all                 (no commands: a join point)

all: report check

a.src:
	echo pear> a.src
	echo apple>> a.src
b.src:
	echo plum> b.src
	echo fig>> b.src

a.o: a.src
	copy /y a.src a.o >NUL
b.o: b.src
	type b.src > b.o
words.o: words.txt
	type words.txt > words.o

app: a.o b.o words.o
	copy /b a.o+b.o+words.o app >NUL

report: app
	find e < app > report
	type report
check: app
	find fig < app > check
	echo check: ok
