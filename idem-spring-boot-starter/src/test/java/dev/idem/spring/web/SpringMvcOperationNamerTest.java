package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * The operation a request is named after must not depend on the order in which the handlers are
 * read. Was: of two handler patterns that both match a path and are equally specific in Spring's
 * terms ({@code /a/{x}} and {@code /{y}/b}, which Spring MVC tells apart by their media types or
 * parameters), the first read won; Spring MVC's handler map is a hash map whose order follows
 * identity hash codes (of the request methods' enum constants), so two instances could name one
 * request differently, and a retry that reached the other instance found no key under its name and
 * ran again.
 */
class SpringMvcOperationNamerTest {

  static class Handlers {
    public String one() {
      return "";
    }

    public String two() {
      return "";
    }
  }

  private static RequestMappingInfoHandlerMapping mapping(String pattern, String consumes, String handlerMethod) throws Exception {
    RequestMappingInfo.BuilderConfiguration options = new RequestMappingInfo.BuilderConfiguration();
    options.setPatternParser(new PathPatternParser());
    RequestMappingHandlerMapping m = new RequestMappingHandlerMapping();
    Method method = Handlers.class.getMethod(handlerMethod);
    m.registerMapping(RequestMappingInfo.paths(pattern).methods(RequestMethod.POST).consumes(consumes).options(options).build(),
        new Handlers(), method);
    return m;
  }

  @Test
  void twoEquallySpecificPatternsNameARequestTheSameWhateverTheOrderTheyAreReadIn() throws Exception {
    RequestMappingInfoHandlerMapping first = mapping("/a/{x}", "application/json", "one");
    RequestMappingInfoHandlerMapping second = mapping("/{y}/b", "text/plain", "two");
    String oneWay = new SpringMvcOperationNamer(() -> List.of(first, second), null).pathTemplate("POST", "/a/b");
    String otherWay = new SpringMvcOperationNamer(() -> List.of(second, first), null).pathTemplate("POST", "/a/b");
    assertThat(oneWay).isNotNull().isEqualTo(otherWay);
  }
}
