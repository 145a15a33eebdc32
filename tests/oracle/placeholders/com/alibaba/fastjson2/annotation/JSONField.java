/* Placeholder for fastjson2's JSONField (annotates two enums in common; fastjson2 is not used here). */
package com.alibaba.fastjson2.annotation;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;

@Retention(RetentionPolicy.RUNTIME)
public @interface JSONField {
    boolean value() default false;
}
