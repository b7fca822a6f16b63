#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
